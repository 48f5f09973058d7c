import type { RoutePath } from '../metrics/database-metrics.service.js';
import type { Author } from './recent-writes.js';
import type { RoutePredicate } from './route-predicate.js';
import type { ReaderTx } from './reader-tx.js';

/** §2.2: history reads are capped and shed (seed 000); authorization reads always keep the writer fallback. */
export type ReaderOperation = 'subscription_history' | 'authorization';

export interface RouteRequest {
  readonly path: RoutePath;
  readonly predicate: RoutePredicate;
  /** Defaults to `subscription_history`. */
  readonly operation?: ReaderOperation;
  /** Datastore span name (§6.4), e.g. `query_events_routed`. */
  readonly span?: string;
  /** Read-your-writes: the author whose acknowledged writes this bounded read must include. */
  readonly author?: Author;
  /**
   * Every statement the read runs carries the GENERIC_PLAN mark (database/statement-cache.ts).
   * The pool client cannot switch the plan mode inside the proved reader transaction, so its
   * first statement sets `plan_cache_mode = force_generic_plan` for the transaction instead.
   */
  readonly genericPlan?: boolean;
  /** Aborted when the client that asked for the read went away: its running statement is cancelled. */
  readonly signal?: AbortSignal;
}

/**
 * The outcome of a route decision. A writer decision is already recorded; a replica decision
 * is recorded by whoever serves the page, so each request records exactly one event.
 * Rejections (seed 000: history cap, saturated reader) are not a variant here on purpose: they
 * are thrown as {@link HistoryReadRejected} out of route(), read() and session(), so the only
 * values a call site can branch on are the two it may serve from; no call site can fall through
 * to the writer on a rejection.
 */
export type RouteDecision =
  | { readonly target: 'writer' }
  | { readonly target: 'replica'; readonly tx: ReaderTx; readonly verdict: 'covered' | 'fresh' };

/**
 * A shed history read (seed 000): the typed pool-timeout error. Named like a pool timeout so
 * the transports answer it with their retryable database-unavailable replies (classifyDbError
 * → `unavailable`: WS `CLOSED error: database error`, HTTP 503 `database unavailable`), never
 * with the terminal `query timed out`.
 */
/**
 * A client-driven read refused a writer connection: the writer-read cap (BUZZ_DB_WRITER_READ_CAP)
 * stayed full for WRITER_READ_WAIT_MS. Answered like a shed history read (retryable).
 */
export class WriterReadRejected extends Error {
  override readonly name = 'PoolTimeoutError';

  constructor() {
    super('writer read rejected: writer_read_cap');
  }
}

export class HistoryReadRejected extends Error {
  override readonly name = 'PoolTimeoutError';

  constructor(readonly reason: 'history_read_cap' | 'reader_acquire_timeout') {
    super(`history read rejected: ${reason}`);
  }
}
