import type { RoutePathLabel, WriterReason } from '../metrics/database-metrics.service.js';
import type { Author } from './recent-writes.js';
import type { RoutePredicate } from './route-predicate.js';
import type { ReaderTx } from './reader-tx.js';

/** §2.2: history reads are capped and shed (seed 000); authorization reads always keep the writer fallback. */
export type ReaderOperation = 'subscription_history' | 'authorization';

export interface RouteRequest {
  /** A label the RoutePaths registry knows (the relay's eighteen, or one registered at set-up). */
  readonly path: RoutePathLabel;
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
  /**
   * Whom the read is charged to in the history-read gate's and the writer-read cap's fair share
   * (common/permit-gate.ts): the relay passes the client's key. Absent = the relay's own read.
   */
  readonly tenant?: string;
  /**
   * A read that keeps a backend busy (a full-text count, a filter of many values): on the replica
   * it needs a heavy place of the history-read gate too, on the writer one under the writer's
   * heavy-read cap (WriterReadOptions.heavy).
   */
  readonly heavy?: boolean;
  /**
   * Called once the read's snapshot is fixed: when its work starts on the writer, or when a replica
   * read's proof is answered (before its work starts on that snapshot). For a replica
   * snapshot `stillShared` says whether an identical read asking now could be served from it: the
   * check its own proof would have to pass (the staleness bound; always for a covered read). The
   * relay's single flight lets such reads share this one.
   */
  readonly onSnapshot?: (stillShared?: () => boolean) => void;
}

/**
 * What a caller of RoutedReader.session() may add to the replica page's handling.
 * - `surface`: replica failures that end the read as they are (recorded `replica/statement_cancelled`),
 *   never re-run on the writer. A history read always surfaces a QueryTimedOutError (seed 002);
 *   this adds to it (the thread window: lock timeouts too).
 * - `redo`: a replica page the writer must serve instead; it returns the writer reason recorded
 *   (once) for the read, or undefined to serve the page (the thread window: a root the replica
 *   does not have yet is `missing_root`).
 */
export interface ReplicaPageRules<T> {
  readonly surface?: (err: unknown) => boolean;
  readonly redo?: (page: T) => WriterReason | undefined;
}

/**
 * The outcome of a route decision, internal to RoutedReader. A writer decision is already
 * recorded; a replica decision is recorded by whoever serves the page, so each request records
 * exactly one event. Rejections (seed 000: history cap, saturated reader) are not a variant here
 * on purpose: they are thrown as HistoryReadRejectedError (database/database-errors.ts).
 */
export type RouteDecision =
  | { readonly target: 'writer' }
  | { readonly target: 'replica'; readonly tx: ReaderTx; readonly verdict: 'covered' | 'fresh' };
