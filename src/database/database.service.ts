import { Inject, Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { Kysely, PostgresDialect, sql } from 'kysely';
import { Pool } from 'pg';
import type { AppConfig } from '../config/app-config.js';
import { APP_CONFIG } from '../config/config.tokens.js';
import { DB } from './database.types.js';
import { migrateToLatest } from './migrator.js';
import { ensureFuturePartitions } from './partition-manager.js';
import { createReaderPool, createWriterPool, endPool, WRITER_POOL_MIN } from './pools.js';

export type ReaderState = 'absent' | 'unknown' | 'reachable' | 'unreachable';

/**
 * Owns the writer and reader pools and their Kysely handles. The writer is
 * connected eagerly (start-up fails without it); the reader is lazy and a boot
 * ping only logs, so a replica that is down never blocks start-up.
 */
@Injectable()
export class DatabaseService implements OnApplicationShutdown {
  private readonly logger = new Logger('Database');
  readonly writerPool: Pool;
  readonly readerPool: Pool | undefined;
  readonly writer: Kysely<DB>;
  readonly reader: Kysely<DB> | undefined;
  private readerState: ReaderState;

  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {
    const db = config.database;
    if (!db.url) throw new Error('DATABASE_URL is not set and no embedded database was started');
    const onError = (role: string, err: Error) =>
      this.logger.warn({ poolRole: role, err: err.message, code: (err as { code?: string }).code }, 'idle database connection failed');
    this.writerPool = createWriterPool(db, db.url, onError);
    this.writer = new Kysely<DB>({ dialect: new PostgresDialect({ pool: this.writerPool }) });
    this.readerPool = db.readUrl ? createReaderPool(db, db.readUrl, onError) : undefined;
    this.reader = this.readerPool ? new Kysely<DB>({ dialect: new PostgresDialect({ pool: this.readerPool }) }) : undefined;
    this.readerState = this.readerPool ? 'unknown' : 'absent';
  }

  /** Called once by main before the app listens. */
  async start(): Promise<void> {
    await this.connectWriter();
    if (this.config.database.autoMigrate) {
      await migrateToLatest(this.writer);
      this.logger.log('migrations applied');
    }
    const created = await ensureFuturePartitions(this.writer, this.config.database.partitionMonthsAhead, new Date(), (m) =>
      this.logger.log(m),
    );
    if (created.length > 0) this.logger.log({ partitions: created }, 'created partitions');
    void this.pingReader();
  }

  getReaderState(): ReaderState {
    return this.readerState;
  }

  /** Readiness: acquire plus SELECT 1 on the writer within a deadline. */
  async writerReachable(timeoutMs = 2000): Promise<boolean> {
    const probe = sql`select 1`.execute(this.writer).then(() => true, () => false);
    return raceTimeout(probe, timeoutMs, false);
  }

  async pingReader(timeoutMs = 2000): Promise<ReaderState> {
    if (!this.reader) return 'absent';
    const ok = await raceTimeout(sql`select 1`.execute(this.reader).then(() => true, () => false), timeoutMs, false);
    const previous = this.readerState;
    this.readerState = ok ? 'reachable' : 'unreachable';
    if (previous === 'unknown') {
      if (ok) this.logger.log('read replica reachable at boot');
      else this.logger.warn('read replica unreachable at boot; serving all-writer until it recovers');
    }
    return this.readerState;
  }

  async onApplicationShutdown(): Promise<void> {
    await Promise.all([endPool(this.writerPool), this.readerPool ? endPool(this.readerPool) : Promise.resolve(true)]);
  }

  /** Opens the writer pool's minimum connections so a bad writer fails start-up. */
  private async connectWriter(): Promise<void> {
    const clients = await Promise.all(
      Array.from({ length: Math.min(WRITER_POOL_MIN, this.config.database.poolSize) }, () => this.writerPool.connect()),
    );
    for (const c of clients) c.release();
  }
}

function raceTimeout<T>(p: Promise<T>, ms: number, fallback: T): Promise<T> {
  return new Promise((resolve) => {
    const t = setTimeout(() => resolve(fallback), ms);
    t.unref();
    p.then((v) => {
      clearTimeout(t);
      resolve(v);
    });
  });
}
