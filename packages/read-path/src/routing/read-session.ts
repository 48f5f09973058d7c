/**
 * ReadSession (database.md §2.8): the request-scoped handle for follow-up queries on the
 * snapshot the page was proved against. On a replica error other than a statement deadline
 * it degrades permanently to the writer (the writer is always at or ahead of the replica, so
 * degraded follow-ups only ever see more). Release it when the request ends, or hold it with
 * `await using`; once released it refuses to run anything (ReadAfterReleaseError) rather than
 * quietly running on the writer.
 */
import { Logger } from '@nestjs/common';
import { Kysely } from 'kysely';
import { QueryTimedOutError, toDatabaseError } from '../database/database-errors.js';
import { DB } from '../database/database.types.js';
import { DatabaseMetrics } from '../metrics/database-metrics.service.js';
import { ReadAfterReleaseError, ReaderTx } from './reader-tx.js';

type WriterRunner = <T>(work: (db: Kysely<DB>) => Promise<T>) => Promise<T>;

export class ReadSession implements AsyncDisposable {
  private released = false;

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
    if (this.released) throw new ReadAfterReleaseError('a read session');
    const tx = this.tx;
    if (tx === undefined) return this.writer(work);
    try {
      return await work(tx.db);
    } catch (caught) {
      const err = toDatabaseError(caught);
      // Seed 002: a deadline is surfaced, never re-run on the writer (it would run the same slow
      // statement); so is a use after release.
      if (err instanceof QueryTimedOutError || err instanceof ReadAfterReleaseError) throw err;
      this.logger.warn({ backend: tx.backend, err }, 'replica session query failed mid-request; degrading to writer');
      this.metrics.readSessionDegraded.inc();
      this.tx = undefined;
      tx.release(true);
      return this.writer(work);
    }
  }

  /** Rolls back and returns the reader connection and releases the history permit (seed 000). Idempotent. */
  release(): void {
    this.released = true;
    this.tx?.release();
    this.tx = undefined;
  }

  /** `await using`: releases, and resolves once a reader connection is back in the pool. */
  async [Symbol.asyncDispose](): Promise<void> {
    const tx = this.tx;
    this.release();
    await tx?.[Symbol.asyncDispose]();
  }
}
