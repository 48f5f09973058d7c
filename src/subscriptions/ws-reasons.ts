/**
 * The WebSocket side of refusals, decided once for every handler: the frames that carry one
 * (`OK false`, `CLOSED`, `NOTICE`), each rendered from a Refusal here, and the refusal a failed
 * read or EVENT ends with (database.md §2.8 "What callers see"). The typed errors come from the
 * database layer's boundary (database/database-errors.ts); nothing here reads a driver code or
 * message.
 */
import { QueryTimedOutError, ReadShareExceededError } from '@buzz-relay/read-path';
import { MemoryRefusedError } from '../memory/memory-budget.js';
import { READ_REFUSALS } from '../nostr/read.refusals.js';
import type { Refusal } from '../nostr/refusal.js';
import { AUTH_REFUSALS } from './auth.refusals.js';
import { WS_REFUSALS } from './ws.refusals.js';

/** `["OK", id, false, reason]`: a refused EVENT or AUTH. */
export function okRefused(id: string, refusal: Refusal): readonly ['OK', string, false, string] {
  return ['OK', id, false, refusal.wire];
}

/** `["CLOSED", subId, reason]`: a subscription refused or ended; without a refusal, a CLOSE acknowledged (`""`). */
export function closedFrame(subId: string, refusal?: Refusal): readonly ['CLOSED', string, string] {
  return ['CLOSED', subId, refusal?.wire ?? ''];
}

export function noticeFrame(refusal: Refusal): readonly ['NOTICE', string] {
  return ['NOTICE', refusal.wire];
}

/**
 * The refusal a REQ or COUNT ends with when its database work failed. `history`: the read that
 * serves the client's filter, where a deadline is the terminal `query timed out`. `admission`:
 * the lookups that admit the request (bans, channel access, relay.md §2.6), whose every failure
 * is the retryable `database error`. A read refused for its key's share is `rate-limited:`; one
 * refused for memory (MemoryRefusedError) carries its own refusal.
 */
export function closedReason(err: unknown, stage: 'history' | 'admission' = 'history'): Refusal {
  if (err instanceof ReadShareExceededError) return WS_REFUSALS.readShare;
  if (err instanceof MemoryRefusedError) return err.refusal;
  return stage === 'history' && err instanceof QueryTimedOutError ? READ_REFUSALS.queryTimedOut : READ_REFUSALS.databaseError;
}

/**
 * The refusal of an EVENT whose ingest threw (a refusal is a result, not a throw), or of an AUTH
 * whose ban check failed. Neither depends on the failure's type: both are fixed by relay.md,
 * decided here so no handler writes its own.
 */
export function okReason(_err: unknown, during: 'event' | 'auth_ban_check' = 'event'): Refusal {
  return during === 'event' ? WS_REFUSALS.internalError : AUTH_REFUSALS.banCheckFailed;
}
