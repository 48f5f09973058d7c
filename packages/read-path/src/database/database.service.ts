/**
 * The writer and search pools and the layer's lifecycle (DatabaseService, below); the reader pool
 * is its own provider (reader-pool.ts), which only the routing layer checks out.
 */
import { performance } from 'node:perf_hooks';
import { BeforeApplicationShutdown, Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { Kysely, PostgresDialect, sql } from 'kysely';
import { Pool, PoolClient } from 'pg';
import { DatabaseMetrics, PoolSample, WriterOperation } from '../metrics/database-metrics.service.js';
import { DATABASE_OPTIONS, poolSettings } from './database.options.js';
import type { DatabaseModuleOptions, PoolSettings } from './database.options.js';
import { DB } from './database.types.js';
import { migrateToLatest } from './migrator.js';
import { ensureFuturePartitions } from './partition-manager.js';
import { ConnectionSteps } from './connection-steps.js';
import { kyselyOn } from './kysely-on-client.js';
import { DatabaseUnavailableError, LockTimedOutError, PoolTimeoutError, toDatabaseError } from './database-errors.js';
import { createSearchPool, createWriterPool, endPool, WRITER_POOL_MIN } from './pools.js';
import { raceTimeout, ReaderPool, ReaderState } from './reader-pool.js';

export type { ReaderState } from './reader-pool.js';

/** How often a running pod re-checks its future partitions. */
export const PARTITION_MAINTENANCE_INTERVAL_MS = 24 * 60 * 60 * 1000;

/**
 * Owns the writer and search pools; the reader pool's state is read here for health, its
 * checkouts are the routing layer's alone (ReaderPool). It starts on Nest's
 * `onApplicationBootstrap`: the writer is connected eagerly (start-up fails without it),
 * migrations and partition maintenance run when the options ask for them, and the reader is lazy
 * (a boot ping only logs, so a replica that is down never blocks start-up). Its timers stop at
 * `beforeApplicationShutdown`; the pools end at `onApplicationShutdown`, after the HTTP server
 * stopped taking requests, so a request still in flight keeps its connection.
 */
@Injectable()
export class DatabaseService implements OnApplicationBootstrap, BeforeApplicationShutdown, OnApplicationShutdown {
  private readonly logger = new Logger('Database');
  /** Checked out through acquireWriter/withWriter only; tests reach it through test/harness/pools.ts. */
  private readonly writerPool: Pool;
  /** The migrator's handle; everything else runs on one instrumented checkout. */
  private readonly writer: Kysely<DB>;
  /** NIP-50 matching only (§2.1 search pool): on the replica when configured, else the writer's URL. */
  private readonly searchPool: Pool;
  private partitionTimer: NodeJS.Timeout | undefined;
  private readonly steps: ConnectionSteps;
  private closing = false;
  /** A spare writer connection is being opened (keepSpareWriter). */
  private spareDialing = false;
  private readonly startHooks: Array<() => Promise<unknown>> = [];
  private started: Promise<void> | undefined;
  /** Logs an idle connection's failure; the replica fence's probe pool reports through it too. */
  readonly onPoolError: (role: string, err: Error) => void;
  /** Pool sizes and writer session timeouts, defaults filled in. */
  readonly settings: PoolSettings;

  constructor(
    @Inject(DATABASE_OPTIONS) private readonly options: DatabaseModuleOptions,
    private readonly metrics: DatabaseMetrics,
    private readonly reader: ReaderPool,
  ) {
    if (!options.writerUrl) throw new Error('DatabaseModule: writerUrl is not set');
    this.settings = poolSettings(options);
    this.onPoolError = (role: string, err: Error) =>
      this.logger.warn({ poolRole: role, err }, 'idle database connection failed');
    this.steps = new ConnectionSteps(metrics, () => this.closing);
    this.writerPool = createWriterPool(this.settings, options.writerUrl, this.onPoolError, this.steps);
    this.writer = new Kysely<DB>({ dialect: new PostgresDialect({ pool: this.writerPool }) });
    this.searchPool = createSearchPool(this.settings, options.readerUrl ?? options.writerUrl, this.onPoolError);
  }

  /** The writer's connection string (the replica fence's probe pool dials it too). */
  get writerUrl(): string {
    return this.options.writerUrl;
  }

  /** The reader's connection string, if any (the replica fence checks its role's grants). */
  get readerUrl(): string | undefined {
    return this.options.readerUrl;
  }

  /**
   * Work to run at the end of start, after the migration decision, in registration order (the
   * fence probe's boot gate, the relay's ban listener). Registered from a constructor, it runs
   * whatever order Nest calls the modules' bootstrap hooks in.
   */
  afterStart(hook: () => Promise<unknown>): void {
    this.startHooks.push(hook);
  }

  /** Nest calls this once the modules are built (`app.init()`, `listen()`, or an application context). */
  onApplicationBootstrap(): Promise<void> {
    this.started ??= this.start();
    return this.started;
  }

  private async start(): Promise<void> {
    await this.connectWriter();
    if (this.options.migrate) {
      await migrateToLatest(this.writer);
      this.logger.log('migrations applied');
    } else {
      this.logger.log('migrations not run by this process (migrate: false)');
    }
    if (this.options.partitionMaintenance) {
      await this.maintainPartitions('bootstrap');
      this.partitionTimer = setInterval(() => void this.maintainPartitions('maintenance').catch(() => undefined), PARTITION_MAINTENANCE_INTERVAL_MS);
      this.partitionTimer.unref();
    }
    void this.pingReader();
    for (const hook of this.startHooks) await hook();
  }

  /**
   * Monthly partitions for this month and the next BUZZ_PARTITION_MONTHS_AHEAD: at start
   * (`bootstrap`), then once a day (`maintenance`), so a pod that runs for months keeps creating
   * them instead of filling the catch-all partition. A failed daily run is logged and retried
   * the next day; at start it fails start-up.
   */
  async maintainPartitions(operation: 'bootstrap' | 'maintenance'): Promise<string[]> {
    const monthsAhead = this.options.partitionMaintenance ? this.options.partitionMaintenance.monthsAhead : 0;
    try {
      const created = await this.withWriter(operation, (db) =>
        ensureFuturePartitions(db, monthsAhead, new Date(), (m) => this.logger.log(m)),
      );
      if (created.length > 0) this.logger.log({ partitions: created }, 'created partitions');
      return created;
    } catch (err) {
      if (operation === 'maintenance') this.logger.warn({ err }, 'partition maintenance failed; retrying in a day');
      throw err;
    }
  }

  /** Whether a reader pool is configured (READ_DATABASE_URL). */
  get hasReader(): boolean {
    return this.reader.configured;
  }

  getReaderState(): ReaderState {
    return this.reader.lastState;
  }

  /**
   * An instrumented serving-writer checkout (§6.2). The caller releases it. A `signal` that aborts
   * while the checkout waits ends it with the `cancelled` outcome; the connection, if it arrives
   * later, goes straight back to the pool.
   */
  acquireWriter(operation: WriterOperation, signal?: AbortSignal): Promise<PoolClient> {
    const checkout = this.acquire(this.writerPool, { poolRole: 'writer', operation }, false, signal);
    // The start-up checkouts open the pool's minimum and no more.
    if (operation !== 'bootstrap') checkout.then(() => this.keepSpareWriter(), () => undefined);
    return checkout;
  }

  /**
   * One spare writer connection. pg-pool opens a connection only for a checkout that found none
   * idle, and that checkout then waits for its own dial even if another connection is released
   * first: in a reconnect storm, while the authentication lookups grow the pool, an event write
   * would wait for a dial (TCP, startup, the after-connect hook) behind a busy event loop
   * (docs/adr/0001-writes-through-a-reconnect-storm.md). So when a checkout leaves no connection
   * idle and the pool is below its ceiling, one more is opened in the background and parked idle,
   * one dial at a time: the next checkout finds it. The pool never exceeds BUZZ_DB_POOL_SIZE, and
   * idle connections above the minimum still close after the idle timeout. A failed dial is
   * recorded by the connection steps (§6.6) and not retried until a later checkout succeeds.
   */
  private keepSpareWriter(): void {
    const pool = this.writerPool;
    if (this.spareDialing || this.closing || pool.idleCount > 0 || pool.totalCount >= this.settings.poolSize) return;
    this.spareDialing = true;
    pool.connect().then(
      (client) => {
        this.spareDialing = false;
        client.release();
      },
      () => void (this.spareDialing = false),
    );
  }

  /**
   * Runs `work` on one instrumented writer checkout and releases it; a connection the server or
   * the network broke is discarded rather than pooled. Its failures leave typed (database-errors.ts).
   */
  async withWriter<T>(operation: WriterOperation, work: (db: Kysely<DB>) => Promise<T>, signal?: AbortSignal): Promise<T> {
    return runReleasing(await this.acquireWriter(operation, signal), work);
  }

  /**
   * An instrumented search-pool checkout (pool_role `search`); the caller releases it. Only the
   * search gate calls this, after it admitted the search, so the pool never queues a search.
   */
  acquireSearch(signal?: AbortSignal): Promise<PoolClient> {
    return this.acquire(this.searchPool, { poolRole: 'search', operation: 'subscription_history' }, false, signal);
  }

  /** withWriter's counterpart on the search pool. */
  async withSearch<T>(work: (db: Kysely<DB>) => Promise<T>): Promise<T> {
    return runReleasing(await this.acquireSearch(), work);
  }

  poolSamples(): { writer: PoolSample; reader?: PoolSample; search: PoolSample } {
    const sample = (p: Pool, max: number): PoolSample => ({ total: p.totalCount, idle: p.idleCount, max });
    return {
      writer: sample(this.writerPool, this.settings.poolSize),
      reader: this.reader.sample(),
      search: sample(this.searchPool, this.settings.searchPoolSize),
    };
  }

  /** Acquire plus SELECT 1 on the writer within a deadline (the library's health check; the relay's readiness samples with health/writer-check.ts). */
  async writerReachable(timeoutMs = 2000): Promise<boolean> {
    const probe = this.withWriter('readiness', (db) => sql`select 1`.execute(db)).then(
      () => true,
      () => false,
    );
    return raceTimeout(probe, timeoutMs, false);
  }

  /** Checks the reader answers (and, at boot, that it is a standby) and returns what it found. */
  pingReader(timeoutMs = 2000): Promise<ReaderState> {
    return this.reader.ping(timeoutMs);
  }

  beforeApplicationShutdown(): void {
    clearInterval(this.partitionTimer);
  }

  async onApplicationShutdown(): Promise<void> {
    clearInterval(this.partitionTimer);
    this.closing = true;
    await Promise.all([endPool(this.writerPool), endPool(this.searchPool)]);
  }

  /** One terminal outcome per attempt: success, error, timeout, or cancelled when `signal` aborted the wait. */
  private acquire(pool: Pool, what: Parameters<DatabaseMetrics['acquireBegin']>[0], legacy: boolean, signal?: AbortSignal): Promise<PoolClient> {
    const started = performance.now();
    const seconds = () => (performance.now() - started) / 1000;
    this.metrics.acquireBegin(what);
    if (signal?.aborted) {
      this.metrics.acquireEnd(what, 'cancelled', 0, legacy);
      return Promise.reject(signal.reason);
    }
    return new Promise((resolve, reject) => {
      let settled = false;
      const onAbort = () => {
        if (settled) return;
        settled = true;
        this.metrics.acquireEnd(what, 'cancelled', seconds(), legacy);
        reject(signal!.reason);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      pool.connect().then(
        (client) => {
          signal?.removeEventListener('abort', onAbort);
          if (settled) return client.release();
          settled = true;
          this.metrics.acquireEnd(what, 'success', seconds(), legacy);
          resolve(client);
        },
        (err: unknown) => {
          signal?.removeEventListener('abort', onAbort);
          if (settled) return;
          settled = true;
          const typed = toDatabaseError(err);
          this.metrics.acquireEnd(what, acquireOutcome(typed), seconds(), legacy);
          reject(typed);
        },
      );
    });
  }

  /** Opens the writer pool's minimum connections so a bad writer fails start-up. */
  private async connectWriter(): Promise<void> {
    await this.steps.run('writer_pool', async () => {
      const clients = await Promise.all(
        Array.from({ length: Math.min(WRITER_POOL_MIN, this.settings.poolSize) }, () => this.acquireWriter('bootstrap')),
      );
      for (const c of clients) c.release();
    });
  }
}

/** A checkout that ran out of time (pg-pool's wait, or a lock wait while connecting) is a `timeout`. */
function acquireOutcome(typed: unknown): 'timeout' | 'error' {
  return typed instanceof PoolTimeoutError || typed instanceof LockTimedOutError ? 'timeout' : 'error';
}

/** Runs `work` on a checked-out client and releases it; a connection the server or network broke is discarded. */
async function runReleasing<T>(client: PoolClient, work: (db: Kysely<DB>) => Promise<T>): Promise<T> {
  try {
    const result = await work(kyselyOn(client));
    client.release();
    return result;
  } catch (err) {
    const typed = toDatabaseError(err);
    client.release(typed instanceof DatabaseUnavailableError ? typed : undefined);
    throw typed;
  }
}
