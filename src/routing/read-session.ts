/**
 * ReadSession (database.md §2.8): the request-scoped handle for follow-up queries on the
 * snapshot the page was proved against. On a replica error other than a statement deadline
 * it degrades permanently to the writer (the writer is always at or ahead of the replica, so
 * degraded follow-ups only ever see more). Release it when the request ends.
 */
import { Logger } from '@nestjs/common';
import { Kysely } from 'kysely';
import { DB } from '../database/database.types.js';
import { classifyDbError } from '../database/pg-errors.js';
import { DatabaseMetrics } from '../metrics/database-metrics.service.js';
import { ReaderTx } from './reader-tx.js';

type WriterRunner = <T>(work: (db: Kysely<DB>) => Promise<T>) => Promise<T>;

export class ReadSession {
  constructor(
    private tx: ReaderTx | undefined,
    private readonly writer: WriterRunner,
    private readonly metrics: DatabaseMetrics,
    private readonly logger: Logger,
  ) {}

  isReplica(): boolean {
    return this.tx !== undefined;
  }

  async run<T>(work: (db: Kysely<DB>) => Promise<T>): Promise<T> {
    const tx = this.tx;
    if (tx === undefined) return this.writer(work);
    try {
      return await work(tx.db);
    } catch (err) {
      // Seed 002: a deadline is surfaced, never re-run on the writer (it would run the same slow statement).
      if (classifyDbError(err) === 'timeout') throw err;
      this.logger.warn({ backend: tx.backend, err }, 'replica session query failed mid-request; degrading to writer');
      this.metrics.readSessionDegraded.inc();
      this.tx = undefined;
      tx.release(true);
      return this.writer(work);
    }
  }

  /** Rolls back and returns the reader connection and releases the history permit (seed 000). */
  release(): void {
    this.tx?.release();
    this.tx = undefined;
  }
}
