/**
 * What a one-shot read, a COUNT or a publish can end with, typed by the client rule it triggers
 * (relay.md §2.11–§2.12, seed 002). `retryable` is the whole contract:
 *
 * - `QueryTimedOutError`: the relay's `error: query timed out`, a statement hit its deadline.
 *   Terminal for one-shot reads: re-sending would run the same slow statement again.
 * - `DatabaseUnavailableError`: `error: database error`; back off and retry.
 * - `RequestTimeoutError`: this client gave up waiting; retryable, and never confused with the
 *   relay's deadline.
 * - `RateLimitedError`: a `rate-limited:` refusal; retry after `retryAfterMs` when the relay says.
 * - `ConnectionClosedError`: the socket went away with the request in flight; retryable.
 * - `RelayClosedError`: any other CLOSED reason (`restricted:`, `auth-required:`, …); terminal.
 * - `AuthFailedError`: NIP-42 was refused; terminal.
 */
import { READ_REFUSALS } from '../nostr/read.refusals.js';
import { parseRefusal } from '../nostr/refusal.js';

export const QUERY_TIMED_OUT_REASON = READ_REFUSALS.queryTimedOut.wire;
export const DATABASE_ERROR_REASON = READ_REFUSALS.databaseError.wire;

export abstract class BuzzClientError extends Error {
  abstract readonly retryable: boolean;

  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}

export class QueryTimedOutError extends BuzzClientError {
  readonly retryable = false;

  constructor(readonly subId: string) {
    super(`relay closed ${subId}: ${QUERY_TIMED_OUT_REASON}`);
  }
}

export class DatabaseUnavailableError extends BuzzClientError {
  readonly retryable = true;

  constructor(readonly subId: string) {
    super(`relay closed ${subId}: ${DATABASE_ERROR_REASON}`);
  }
}

export class RequestTimeoutError extends BuzzClientError {
  readonly retryable = true;

  constructor(
    readonly what: string,
    readonly timeoutMs: number,
  ) {
    super(`request timed out: no answer to ${what} within ${timeoutMs} ms`);
  }
}

export class RateLimitedError extends BuzzClientError {
  readonly retryable = true;

  constructor(
    readonly reason: string,
    /** From the relay's `retry in Ns` hint; undefined when it gave none. */
    readonly retryAfterMs: number | undefined,
  ) {
    super(reason);
  }
}

export class ConnectionClosedError extends BuzzClientError {
  readonly retryable = true;

  constructor(detail: string) {
    super(`connection closed: ${detail}`);
  }
}

export class RelayClosedError extends BuzzClientError {
  readonly retryable = false;

  constructor(
    readonly subId: string,
    readonly reason: string,
  ) {
    super(`relay closed ${subId}: ${reason}`);
  }
}

export class AuthFailedError extends BuzzClientError {
  readonly retryable = false;

  constructor(readonly reason: string) {
    super(`NIP-42 authentication refused: ${reason}`);
  }
}

const RETRY_HINT = /retry in (\d+)s\b/;

/** The `retry in Ns` hint of a `rate-limited:` reason, in ms. */
export function retryAfterMs(reason: string): number | undefined {
  const m = RETRY_HINT.exec(reason);
  return m ? Number(m[1]) * 1000 : undefined;
}

/** The typed error for a relay `CLOSED` reason on a request that had not finished. */
export function errorForClosed(subId: string, reason: string): BuzzClientError {
  if (reason === QUERY_TIMED_OUT_REASON) return new QueryTimedOutError(subId);
  if (reason === DATABASE_ERROR_REASON) return new DatabaseUnavailableError(subId);
  if (parseRefusal(reason)?.code === 'rate-limited') return new RateLimitedError(reason, retryAfterMs(reason));
  return new RelayClosedError(subId, reason);
}

/** CLOSED reasons a live subscription treats as transient: back off and resubscribe with the same filter. */
export function isTransientForLiveSubscription(reason: string): boolean {
  return reason === QUERY_TIMED_OUT_REASON || reason === DATABASE_ERROR_REASON;
}
