import { BeforeApplicationShutdown, Injectable } from '@nestjs/common';
import { DatabaseService } from '../database/database.service.js';
import { RelayMetrics } from '../metrics/relay-metrics.service.js';
import { LifecycleState } from './lifecycle-state.js';
import { checkWriter, type WriterCheck } from './writer-check.js';

/** What /readyz reports for the writer. `busy`: every pool connection is serving clients. */
export type WriterReadiness = 'reachable' | 'busy' | 'unreachable';

/** How often the writer (and the reader, reported only) is sampled. */
export const READINESS_SAMPLE_MS = 1000;

const READINESS_OF: Record<WriterCheck, WriterReadiness> = {
  success: 'reachable',
  pool_timeout: 'busy',
  pool_error: 'unreachable',
  query_timeout: 'unreachable',
  query_error: 'unreachable',
};

/**
 * The per-pod dependency sampler behind /readyz (relay.md §6.1). /readyz answers from the last
 * sample and never waits on a pool: client reads can hold every writer connection for seconds,
 * and a probe queued behind them timed out at the kubelet, which then took the pod out of
 * service for being busy, moving its load onto the others. A pool that is full of client work
 * is `busy` and stays ready; a writer that refuses a dial or does not answer `SELECT 1` within
 * 2 s is `unreachable` and the pod is not ready, as before. Samples never overlap: the next one
 * is scheduled when the last one ended.
 */
@Injectable()
export class ReadinessSampler implements BeforeApplicationShutdown {
  /** The writer was connected at start (start-up fails without it): reachable until a sample says otherwise. */
  private writerState: WriterReadiness = 'reachable';
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
    this.writerState = READINESS_OF[writer];
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
