import { BeforeApplicationShutdown, Injectable } from '@nestjs/common';
import { DatabaseService } from '@buzz-relay/read-path';
import { RelayMetrics } from '../metrics/relay-metrics.service.js';
import { LifecycleState } from './lifecycle-state.js';
import { checkWriter, type WriterCheck } from './writer-check.js';

/** What /readyz reports for the writer. `busy`: every pool connection is serving clients. */
export type WriterReadiness = 'reachable' | 'busy' | 'unreachable';

/** How often the writer (and the reader, reported only) is sampled. */
export const READINESS_SAMPLE_MS = 1000;
/** Samples in a row that found no connection or no answer in time before the writer counts as unreachable. */
export const SLOW_SAMPLES_UNREACHABLE = 5;

const FAILED: ReadonlySet<WriterCheck> = new Set(['pool_error', 'query_error']);
const SLOW: ReadonlySet<WriterCheck> = new Set(['pool_timeout', 'query_timeout']);

/**
 * The per-pod dependency sampler behind /readyz (relay.md §6.1). /readyz answers from the last
 * sample and never waits on a pool: client reads can hold every writer connection for seconds,
 * and a probe queued behind them timed out at the kubelet, which then took the pod out of
 * service for being busy, moving its load onto the others. A writer whose dial or `SELECT 1`
 * fails is `unreachable` at once and the pod is not ready, as before. A pool whose every
 * connection is checked out by client work is `busy` and stays ready. A dial or a `SELECT 1` not
 * answered within 2 s (a writer slowed by load) is `busy` too, until SLOW_SAMPLES_UNREACHABLE
 * samples in a row said so (a writer that hangs). Samples never overlap: the next one is
 * scheduled when the last one ended.
 */
@Injectable()
export class ReadinessSampler implements BeforeApplicationShutdown {
  /** The writer was connected at start (start-up fails without it): reachable until a sample says otherwise. */
  private writerState: WriterReadiness = 'reachable';
  private slowSamples = 0;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    private readonly db: DatabaseService,
    private readonly metrics: RelayMetrics,
    private readonly lifecycle: LifecycleState,
  ) {
    db.afterStart(async () => this.schedule(0));
  }

  get writer(): WriterReadiness {
    return this.writerState;
  }

  /** Ready unless the writer is unreachable or the pod is draining. */
  get ready(): boolean {
    return this.writerState !== 'unreachable' && !this.lifecycle.draining;
  }

  /** One sample of the writer and the reader now (the timer calls it; tests may too). */
  async sample(): Promise<WriterReadiness> {
    const [writer] = await Promise.all([checkWriter(this.db), this.db.pingReader()]);
    this.slowSamples = SLOW.has(writer) ? this.slowSamples + 1 : 0;
    this.writerState = writer === 'success' ? 'reachable' : FAILED.has(writer) || this.slowSamples >= SLOW_SAMPLES_UNREACHABLE ? 'unreachable' : 'busy';
    this.metrics.readinessState.set(this.ready ? 1 : 0);
    return this.writerState;
  }

  beforeApplicationShutdown(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.sample().finally(() => this.schedule(READINESS_SAMPLE_MS)), delayMs);
    this.timer.unref();
  }
}
