/**
 * The NIP-CW thread window's limits (relay.md §3.6b, database.md §2.8) and its own error strings
 * (the one HTTP filter answers a thread window's failures in these words: OwnWordingFailure):
 *
 * - one 8 s deadline for the whole request; each statement runs under a transaction-local
 *   `statement_timeout` of min(4 s, time left) and `lock_timeout` 1 s;
 * - a scan budget shared by every window, aux page and replica→writer re-run of the request:
 *   at most 64 aux queries, 8192 raw rows and 8 MiB of content plus tags;
 * - an 8 MiB budget for the serialised response.
 */
import { HttpError } from '../common/http-error.js';
import { QueryTimedOutError } from '@buzz-relay/read-path';

export const THREAD_WINDOW_DEADLINE_MS = 8000;
export const THREAD_WINDOW_STATEMENT_MS = 4000;
export const THREAD_WINDOW_LOCK_TIMEOUT_MS = 1000;
export const MAX_AUX_QUERIES = 64;
export const MAX_SCANNED_ROWS = 8192;
export const MAX_SCANNED_BYTES = 8 * 1024 * 1024;
export const MAX_RESPONSE_BYTES = 8 * 1024 * 1024;

export const THREAD_TIMEOUT_MESSAGE = 'thread database timeout; retry window';
export const THREAD_BUDGET_MESSAGE = 'thread window scan budget exceeded; reduce window work before retrying';
export const THREAD_BYTES_MESSAGE = 'thread window exceeds response byte budget';
export const THREAD_AUTH_CHANGED_MESSAGE = 'thread authorization changed; retry query';

/**
 * The request ran out of its 8 s before a statement could start: a deadline like a statement's
 * own, so a replica read surfaces it rather than re-running it on the writer (seed 002).
 */
export class ThreadWindowDeadlineExceeded extends QueryTimedOutError {}

/** The request's scan budget is spent: its own 503, surfaced, never retried on another pool. */
export class ThreadWindowBudgetExceeded extends HttpError {
  constructor(readonly detail: string) {
    super(503, THREAD_BUDGET_MESSAGE);
    this.name = 'ThreadWindowBudgetExceeded';
  }
}

export class RequestDeadline {
  private readonly endsAt: number;

  constructor(
    ms = THREAD_WINDOW_DEADLINE_MS,
    private readonly now: () => number = Date.now,
  ) {
    this.endsAt = now() + ms;
  }

  /** The statement_timeout of the next statement: min(4 s, time left), or throws when none is left. */
  statementMs(): number {
    const left = this.endsAt - this.now();
    if (left <= 0) throw new ThreadWindowDeadlineExceeded('thread window request deadline exceeded');
    return Math.min(THREAD_WINDOW_STATEMENT_MS, Math.ceil(left));
  }
}

export class ScanBudget {
  private rows = 0;
  private bytes = 0;
  private auxQueries = 0;

  /** Counts one aux query before it runs. */
  auxQuery(): void {
    if (++this.auxQueries > MAX_AUX_QUERIES) throw new ThreadWindowBudgetExceeded(`more than ${MAX_AUX_QUERIES} aux queries`);
  }

  /** Counts rows a statement returned, probe rows included. */
  scanned(rows: number, bytes: number): void {
    this.rows += rows;
    this.bytes += bytes;
    if (this.rows > MAX_SCANNED_ROWS) throw new ThreadWindowBudgetExceeded(`more than ${MAX_SCANNED_ROWS} rows scanned`);
    if (this.bytes > MAX_SCANNED_BYTES) throw new ThreadWindowBudgetExceeded(`more than ${MAX_SCANNED_BYTES} bytes scanned`);
  }
}
