/**
 * Writer connection setup, step by step (database.md §6.6): each step records one start, one
 * terminal outcome and its duration, so an operator can see which part of opening a writer
 * connection fails or slows down (the dial, arming the floor guard, the session timeouts, the
 * isolation check). Steps:
 * - `writer_pool`: opening the pool's minimum connections at start (a bad writer fails start-up);
 * - `physical_connect`: TCP, TLS and authentication of one new connection;
 * - `created_at_floor`, `session_timeouts`, `isolation`: the three statements of the after-connect
 *   hook, in that order;
 * - `ready`: the after-connect hook as a whole; a connection that passes it is handed out.
 * Outcomes: `succeeded`; `timed_out` (the dial hit its connect timeout, or a statement hit a
 * server timeout); `cancelled` (the relay was shutting down and closed the connection under the
 * step); `failed` (anything else). Labels carry no host, user or error text.
 */
import { performance } from 'node:perf_hooks';

export const CONNECTION_STEPS = ['writer_pool', 'physical_connect', 'created_at_floor', 'session_timeouts', 'isolation', 'ready'] as const;
export type ConnectionStep = (typeof CONNECTION_STEPS)[number];
export const CONNECTION_STEP_OUTCOMES = ['succeeded', 'failed', 'timed_out', 'cancelled'] as const;
export type ConnectionStepOutcome = (typeof CONNECTION_STEP_OUTCOMES)[number];

/** Where the step records go (DatabaseMetrics); pools built without one record nothing. */
export interface ConnectionStepSink {
  stepStarted(step: ConnectionStep): void;
  stepEnded(step: ConnectionStep, outcome: ConnectionStepOutcome, seconds: number): void;
}

export class ConnectionSteps {
  constructor(
    private readonly sink: ConnectionStepSink,
    /** True once the relay began closing its pools: a step that fails then was cancelled. */
    private readonly closing: () => boolean = () => false,
  ) {}

  /** Runs one step; `timedOut` tells a connect-timeout failure apart from other errors. */
  async run<T>(step: ConnectionStep, fn: () => Promise<T>, timedOut?: (err: unknown, elapsedMs: number) => boolean): Promise<T> {
    const started = performance.now();
    this.sink.stepStarted(step);
    try {
      const result = await fn();
      this.sink.stepEnded(step, 'succeeded', (performance.now() - started) / 1000);
      return result;
    } catch (err) {
      const elapsed = performance.now() - started;
      this.sink.stepEnded(step, this.outcomeOf(err, elapsed, timedOut), elapsed / 1000);
      throw err;
    }
  }

  private outcomeOf(err: unknown, elapsedMs: number, timedOut?: (err: unknown, elapsedMs: number) => boolean): ConnectionStepOutcome {
    if (this.closing()) return 'cancelled';
    const code = (err as { code?: unknown } | null)?.code;
    if (timedOut?.(err, elapsedMs) || code === '57014' || code === '55P03') return 'timed_out';
    return 'failed';
  }
}
