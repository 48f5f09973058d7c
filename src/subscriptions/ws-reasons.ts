/**
 * The WebSocket side of database.md §2.8 "What callers see", decided once for every handler:
 * the `CLOSED` reason a failed read ends with and the `OK` reason of an EVENT that failed. The
 * typed errors come from the database layer's boundary (database/database-errors.ts); nothing
 * here reads a driver code or message.
 */
import { QueryTimedOutError, ReadShareExceededError } from '@buzz-relay/read-path';
import { MemoryRefusedError } from '../memory/memory-budget.js';

/** Terminal (seed 002): a statement hit its deadline; clients do not re-send a one-shot read. */
export const QUERY_TIMED_OUT_REASON = 'error: query timed out';
/** Retryable (seed 000): the database was unavailable, the read was shed, or it failed otherwise. */
export const DATABASE_ERROR_REASON = 'error: database error';
/** A read refused because the client's key held its share of a read gate (BUZZ_KEY_SHARE_PERCENT): the client should slow down. */
export const READ_SHARE_REASON = 'rate-limited: too many concurrent reads for this key';
/** An EVENT whose ingest failed for a reason that is not a refusal. */
export const INTERNAL_ERROR_REASON = 'error: internal server error';
/** An AUTH whose ban check failed (relay.md §2.5 step 2: fail closed). */
export const BAN_CHECK_ERROR_REASON = 'error: internal error checking restriction state';

/**
 * The `CLOSED` reason of a REQ or COUNT whose database work failed. `history`: the read that
 * serves the client's filter, where a deadline is the terminal `query timed out`. `admission`:
 * the lookups that admit the request (bans, channel access, relay.md §2.6), whose every failure
 * is the retryable `database error`. A read refused for its key's share is `rate-limited:`; one
 * refused for memory (MemoryRefusedError) carries its own reason.
 */
export function closedReason(err: unknown, stage: 'history' | 'admission' = 'history'): string {
  if (err instanceof ReadShareExceededError) return READ_SHARE_REASON;
  if (err instanceof MemoryRefusedError) return err.refusal.wire;
  return stage === 'history' && err instanceof QueryTimedOutError ? QUERY_TIMED_OUT_REASON : DATABASE_ERROR_REASON;
}

/**
 * The `OK false` reason of an EVENT whose ingest threw (a refusal is a result, not a throw), or
 * of an AUTH whose ban check failed. Neither depends on the failure's type: both are fixed
 * strings of relay.md, decided here so no handler writes its own.
 */
export function okReason(_err: unknown, during: 'event' | 'auth_ban_check' = 'event'): string {
  return during === 'event' ? INTERNAL_ERROR_REASON : BAN_CHECK_ERROR_REASON;
}
