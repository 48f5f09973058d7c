/**
 * Open-loop load: requests are issued on a fixed schedule (`rate` per second, whatever the
 * answers do), and each latency is measured from the request's scheduled time, not from when it
 * was actually sent, so a stalled sender cannot hide its own queueing (no coordinated omission).
 * The closed-loop runs of the benches measure capacity; this measures the latency a client sees
 * at a given load below it.
 */
import { secondsSince } from './bench-env.js';

export interface OpenLoopResult {
  /** Requests completed per second over the run (until the last answer). */
  achievedPerS: number;
  latenciesMs: number[];
  failures: string[];
}

/**
 * Issues `rate * seconds` requests, request `i` at `i / rate` seconds after the start; `issue(i)`
 * resolves when request `i` is answered and throws (or returns a message) when it went wrong.
 */
export async function runOpenLoop(rate: number, seconds: number, issue: (i: number) => Promise<string | undefined>): Promise<OpenLoopResult> {
  const total = Math.round(rate * seconds);
  const intervalNs = 1e9 / rate;
  const latenciesMs: number[] = [];
  const failures: string[] = [];
  const inFlight: Promise<void>[] = [];
  const start = process.hrtime.bigint();
  let next = 0;
  while (next < total) {
    const elapsedNs = Number(process.hrtime.bigint() - start);
    for (; next < total && next * intervalNs <= elapsedNs; next++) {
      const scheduledNs = next * intervalNs;
      const i = next;
      inFlight.push(
        issue(i).then(
          (failure) => {
            latenciesMs.push((Number(process.hrtime.bigint() - start) - scheduledNs) / 1e6);
            if (failure !== undefined) failures.push(failure);
          },
          (err: Error) => void failures.push(err.message),
        ),
      );
    }
    // Sleep until the next slot (timers are ms-grained; a late wake-up is charged to latency).
    const waitMs = Math.max(0, (next * intervalNs - Number(process.hrtime.bigint() - start)) / 1e6);
    await new Promise((r) => setTimeout(r, Math.floor(waitMs)));
  }
  await Promise.all(inFlight);
  return { achievedPerS: latenciesMs.length / secondsSince(start), latenciesMs, failures };
}
