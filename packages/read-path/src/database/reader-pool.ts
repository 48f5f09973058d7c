/**
 * The reader (replica) pool: lazy, checked out only by the routing layer, which proves a session's
 * freshness before any page runs on it (database.md §2.5).
 *
 * The door is the type: ReaderPool is a provider of DatabaseModule but the package exports it
 * from neither of its entry points, so a service that imports the read path cannot name it, and
 * cannot inject it, and its replica reads go through RoutedReader. DatabaseService keeps the
 * reader's state for health checks (hasReader, getReaderState, pingReader, poolSamples) and
 * delegates them here.
 */
import { performance } from 'node:perf_hooks';
import { Inject, Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { Pool, PoolClient } from 'pg';
import { DatabaseMetrics, PoolSample, ReaderPoolOperation } from '../metrics/database-metrics.service.js';
import { DATABASE_OPTIONS, poolSettings } from './database.options.js';
import type { DatabaseModuleOptions } from './database.options.js';
import { LockTimedOutError, PoolTimeoutError, toDatabaseError } from './database-errors.js';
import { ACQUIRE_TIMEOUT_MESSAGE, createReaderPool, endPool, isDialFailure, READER_ACQUIRE_TIMEOUT_MS } from './pools.js';

export type ReaderState = 'absent' | 'unknown' | 'reachable' | 'unreachable';

@Injectable()
export class ReaderPool implements OnApplicationShutdown {
  private readonly logger = new Logger('Database');
  private readonly pool: Pool | undefined;
  private readonly max: number;
  private state: ReaderState;
  /** How the pool's last settled checkout ended: a connection, or a dial that failed. */
  private lastDial: 'connected' | 'failed' | undefined;

  constructor(
    @Inject(DATABASE_OPTIONS) options: DatabaseModuleOptions,
    private readonly metrics: DatabaseMetrics,
  ) {
    const settings = poolSettings(options);
    this.max = settings.readPoolSize;
    this.pool = options.readerUrl
      ? createReaderPool(settings, options.readerUrl, (role, err) => this.logger.warn({ poolRole: role, err }, 'idle database connection failed'))
      : undefined;
    this.state = this.pool ? 'unknown' : 'absent';
  }

  /** Whether a reader is configured (DatabaseModule readerUrl, READ_DATABASE_URL in the relay). */
  get configured(): boolean {
    return this.pool !== undefined;
  }

  /** What the last ping found (`absent` without a reader, `unknown` before the first). */
  get lastState(): ReaderState {
    return this.state;
  }

  /**
   * An instrumented reader checkout; emits the legacy families too (§6.2). The read waits at most
   * READER_ACQUIRE_TIMEOUT_MS and then fails with the pool-timeout message, but a dial it started
   * goes on (to READER_DIAL_TIMEOUT_MS): a connection that arrives late goes back to the pool for
   * the next read, and how the dial ended is kept for dialsFailing().
   */
  acquire(operation: ReaderPoolOperation): Promise<PoolClient> {
    const pool = this.pool;
    if (!pool) return Promise.reject(new Error('no reader pool configured'));
    const what = { poolRole: 'reader', operation } as const;
    const started = performance.now();
    const seconds = () => (performance.now() - started) / 1000;
    this.metrics.acquireBegin(what);
    return new Promise((resolve, reject) => {
      let settled = false;
      const timer = setTimeout(() => {
        settled = true;
        this.metrics.acquireEnd(what, 'timeout', seconds(), true);
        reject(new PoolTimeoutError(ACQUIRE_TIMEOUT_MESSAGE));
      }, READER_ACQUIRE_TIMEOUT_MS);
      pool.connect().then(
        (client) => {
          this.lastDial = 'connected';
          if (settled) return client.release();
          settled = true;
          clearTimeout(timer);
          this.metrics.acquireEnd(what, 'success', seconds(), true);
          resolve(client);
        },
        (err: unknown) => {
          if (isDialFailure(err)) this.lastDial = 'failed';
          if (settled) return;
          settled = true;
          clearTimeout(timer);
          const typed = toDatabaseError(err);
          this.metrics.acquireEnd(what, typed instanceof PoolTimeoutError || typed instanceof LockTimedOutError ? 'timeout' : 'error', seconds(), true);
          reject(typed);
        },
      );
    });
  }

  /**
   * Whether the last settled checkout was a dial that failed (refused, reset, timed out at
   * READER_DIAL_TIMEOUT_MS): the replica is down or not answering, rather than busy. A checkout
   * that times out while dials are still under way, or after the last one connected, is a busy
   * reader (such reads are shed, not sent to the writer: §3.3).
   */
  dialsFailing(): boolean {
    return this.lastDial === 'failed';
  }

  sample(): PoolSample | undefined {
    return this.pool ? { total: this.pool.totalCount, idle: this.pool.idleCount, max: this.max } : undefined;
  }

  /** One checkout and `pg_is_in_recovery()`; a reader that answers but is not a standby is logged once, at boot. */
  async ping(timeoutMs: number): Promise<ReaderState> {
    if (!this.pool) return 'absent';
    const ping = async (): Promise<boolean> => {
      const client = await this.acquire(this.state === 'unknown' ? 'bootstrap' : 'maintenance');
      try {
        const { rows } = await client.query<{ standby: boolean }>('select pg_is_in_recovery() as standby');
        if (this.state === 'unknown' && rows[0]?.standby === false) {
          this.logger.warn('DatabaseModule readerUrl (READ_DATABASE_URL in the relay) points at a server that is not in recovery (not a standby)');
        }
        client.release();
        return true;
      } catch (err) {
        client.release(err as Error);
        return false;
      }
    };
    const ok = await raceTimeout(ping().catch(() => false), timeoutMs, false);
    const previous = this.state;
    this.state = ok ? 'reachable' : 'unreachable';
    if (previous === 'unknown') {
      if (ok) this.logger.log('read replica reachable at boot');
      else this.logger.warn('read replica unreachable at boot; serving all-writer until it recovers');
    }
    return this.state;
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.pool) await endPool(this.pool);
  }
}

/** `p`, or `fallback` once `ms` passed first. */
export function raceTimeout<T>(p: Promise<T>, ms: number, fallback: T): Promise<T> {
  return new Promise((resolve) => {
    const t = setTimeout(() => resolve(fallback), ms);
    t.unref();
    p.then((v) => {
      clearTimeout(t);
      resolve(v);
    });
  });
}
