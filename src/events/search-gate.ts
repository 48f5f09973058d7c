/**
 * Admission for NIP-50 matching (database.md §2.1, the search pool). Matching runs only
 * on the search pool, behind a FIFO permit gate with one permit per search-pool connection, so an
 * admitted search never queues inside the pool and a burst of searches cannot take more than the
 * pool. A search that waits HISTORY_PERMIT_WAIT_MS for a permit is refused the way a shed history
 * read is (`HistoryReadRejectedError('history_read_cap')`: `CLOSED "error: database error"`, HTTP 503
 * `database unavailable`, both retryable) and recorded as `rejected/history_read_cap` under the
 * search's hydration path, the one route event that search request would otherwise have had. It
 * is never run on the writer instead.
 *
 * Searches charged to a key share the permits fairly (PermitGate): one key holds at most its share
 * (BUZZ_KEY_SHARE_PERCENT of the pool, at least one), and a released permit goes to the key that
 * searched least. A search refused because its key held its share throws ReadShareExceededError
 * (`rate-limited:`), recorded under the same route event.
 */
import { Inject, Injectable, Optional } from '@nestjs/common';
import { Kysely } from 'kysely';
import { HISTORY_PERMIT_WAIT_MS, Permit, PermitGate, recordReadShareRefusal, shareOf } from '@buzz-relay/read-path/internal';
import type { AppConfig } from '../config/app-config.js';
import { APP_CONFIG } from '../config/config.tokens.js';
import { DatabaseMetrics, DatabaseService, DB, HistoryReadRejectedError, ReadShareExceededError, RoutePathLabel } from '@buzz-relay/read-path';

@Injectable()
export class SearchGate {
  private readonly permits: PermitGate;

  constructor(
    private readonly db: DatabaseService,
    private readonly metrics: DatabaseMetrics,
    @Optional() @Inject(APP_CONFIG) config?: AppConfig,
  ) {
    const size = db.settings.searchPoolSize;
    this.permits = new PermitGate(size, { share: shareOf(size, config?.limits.keySharePercent ?? 100) });
  }

  /** Searches matching right now, and searches waiting for a place. */
  get inUse(): number {
    return this.permits.inUse;
  }

  get waiting(): number {
    return this.permits.waiting;
  }

  /** Takes a place (tests hold the gate full with it); undefined once `waitMs` passed without one. */
  admit(waitMs = HISTORY_PERMIT_WAIT_MS, tenant?: string): Promise<Permit | undefined> {
    return this.permits.acquire(waitMs, tenant);
  }

  /** Runs `work` on one search-pool connection once admitted; `path` labels a refusal, `tenant` is whom it is charged to. */
  async match<T>(path: RoutePathLabel, work: (db: Kysely<DB>) => Promise<T>, tenant?: string): Promise<T> {
    const permit = await this.permits.admit(HISTORY_PERMIT_WAIT_MS, tenant);
    if (typeof permit === 'string') {
      recordReadShareRefusal('search', permit);
      this.metrics.recordRoute(path, { decision: 'rejected', reason: 'history_read_cap' });
      throw permit === 'share' ? new ReadShareExceededError('search') : new HistoryReadRejectedError('history_read_cap');
    }
    try {
      return await this.db.withSearch(work);
    } finally {
      permit.release();
    }
  }
}
