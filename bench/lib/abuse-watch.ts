/**
 * What the abuse bench reads from the relay process while it runs: its resident set from /proc
 * every 100 ms (it answers even while the relay's event loop is stalled), /metrics every second
 * (heap in use, prom-client's event-loop delay maximum, which the relay's monitorEventLoopDelay
 * histogram resets at every scrape, so each scrape's figure covers the time since the previous
 * one), and whether and when the process exited.
 */
import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { metricsUrlOf } from './bench-env.js';
import { parseSamples, sumOf, type Sample } from './storm-stats.js';

export interface Scrape {
  /** performance.now() when the scrape was asked for and when it was answered. */
  readonly from: number;
  readonly at: number;
  readonly samples: Sample[];
}

export interface RelayExit {
  readonly at: number;
  readonly code: number | null;
  readonly signal: string | null;
}

const RSS_EVERY_MS = 100;
const SCRAPE_EVERY_MS = 1000;
const SCRAPE_TIMEOUT_MS = 60_000;

export function procStatusBytes(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  try {
    const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

export class RelayWatch {
  readonly rss: Array<{ at: number; bytes: number }> = [];
  readonly scrapes: Scrape[] = [];
  exit: RelayExit | undefined;
  readonly exited: Promise<RelayExit>;
  private readonly rssTimer: NodeJS.Timeout;
  private running = true;
  private readonly loop: Promise<void>;
  private highWater = 0;

  constructor(
    private readonly child: ChildProcess,
    private readonly relayUrl: string,
  ) {
    const pid = child.pid ?? 0;
    this.exited = new Promise((resolve) => {
      const record = (code: number | null, signal: string | null) => resolve((this.exit = { at: performance.now(), code, signal }));
      if (child.exitCode !== null || child.signalCode !== null) record(child.exitCode, child.signalCode);
      else child.once('exit', record);
    });
    this.rssTimer = setInterval(() => {
      const bytes = procStatusBytes(pid, 'VmRSS');
      if (bytes > 0) this.rss.push({ at: performance.now(), bytes });
      this.highWater = Math.max(this.highWater, procStatusBytes(pid, 'VmHWM'));
    }, RSS_EVERY_MS);
    this.loop = this.run();
  }

  /** The relay's VmHWM as last read (the kernel's own peak of its resident set). */
  get rssHighWater(): number {
    return this.highWater;
  }

  /** One scrape now, recorded with the periodic ones; undefined when the relay did not answer. */
  async scrape(): Promise<Scrape | undefined> {
    const url = metricsUrlOf(this.relayUrl);
    if (url === undefined || this.exit) return undefined;
    const from = performance.now();
    const text = await fetch(url, { signal: AbortSignal.timeout(SCRAPE_TIMEOUT_MS) }).then(
      (res) => (res.ok ? res.text() : ''),
      () => '',
    );
    if (text === '') return undefined;
    const scrape = { from, at: performance.now(), samples: parseSamples(text) };
    this.scrapes.push(scrape);
    return scrape;
  }

  async stop(): Promise<void> {
    this.running = false;
    clearInterval(this.rssTimer);
    await this.loop;
  }

  private async run(): Promise<void> {
    while (this.running && !this.exit) {
      await this.scrape();
      await sleep(SCRAPE_EVERY_MS);
    }
  }
}

/** The largest value of a gauge over the scrapes answered inside [from, to] (their windows overlapping it). */
export function gaugeMax(scrapes: readonly Scrape[], name: string, from: number, to: number): number {
  let max = Number.NaN;
  let previous = Number.NEGATIVE_INFINITY;
  for (const s of scrapes) {
    const windowStart = previous;
    previous = s.at;
    if (s.at < from || windowStart > to) continue;
    const v = sumOf(s.samples, name);
    if (!(v <= max)) max = v;
  }
  return max;
}
