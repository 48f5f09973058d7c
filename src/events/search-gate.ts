/**
 * Admission for NIP-50 matching (database.md §2.1, the search pool; issue 20). Matching runs only
 * on the search pool, behind a FIFO permit gate with one permit per search-pool connection, so an
 * admitted search never queues inside the pool and a burst of searches cannot take more than the
 * pool. A search that waits HISTORY_PERMIT_WAIT_MS for a permit is refused the way a shed history
 * read is (`HistoryReadRejectedError('history_read_cap')`: `CLOSED "error: database error"`, HTTP 503
 * `database unavailable`, both retryable) and recorded as `rejected/history_read_cap` under the
 * search's hydration path, the one route event that search request would otherwise have had. It
 * is never run on the writer instead.
 */
import { Injectable } from '@nestjs/common';
import { Kysely } from 'kysely';
import { Permit, PermitGate } from '../common/permit-gate.js';
import { HistoryReadRejectedError } from '../database/database-errors.js';
import { DatabaseService } from '../database/database.service.js';
import { DB } from '../database/database.types.js';
import { HISTORY_PERMIT_WAIT_MS } from '../history-reads/history-read-gate.js';
import { DatabaseMetrics, RoutePathLabel } from '../metrics/database-metrics.service.js';

@Injectable()
export class SearchGate {
  private readonly permits: PermitGate;

  constructor(
    private readonly db: DatabaseService,
    private readonly metrics: DatabaseMetrics,
  ) {
    this.permits = new PermitGate(db.settings.searchPoolSize);
  }

  /** Searches matching right now, and searches waiting for a place. */
  get inUse(): number {
    return this.permits.inUse;
  }

  get waiting(): number {
    return this.permits.waiting;
  }

  /** Takes a place (tests hold the gate full with it); undefined once `waitMs` passed without one. */
  admit(waitMs = HISTORY_PERMIT_WAIT_MS): Promise<Permit | undefined> {
    return this.permits.acquire(waitMs);
  }

  /** Runs `work` on one search-pool connection once admitted; `path` labels a refusal. */
  async match<T>(path: RoutePathLabel, work: (db: Kysely<DB>) => Promise<T>): Promise<T> {
    const permit = await this.admit();
    if (permit === undefined) {
      this.metrics.recordRoute(path, { decision: 'rejected', reason: 'history_read_cap' });
      throw new HistoryReadRejectedError('history_read_cap');
    }
    try {
      return await this.db.withSearch(work);
    } finally {
      permit.release();
    }
  }
}
