/**
 * The moderation commands' refusals (9040–9044, the operator CLI, and `/moderation/*` over HTTP
 * for `moderatorRequired`). Quoted input is cut to 32 characters.
 */
import { Refusal } from '../nostr/refusal.js';

export const MODERATION_REFUSALS = {
  moderatorRequired: new Refusal('restricted', 'moderator access required'),
  moderateSelf: new Refusal('invalid', 'cannot moderate yourself'),
  outranked: new Refusal('restricted', 'cannot moderate a relay owner, operator or admin of equal or higher rank'),
  timeoutNeedsExpiration: new Refusal('invalid', 'timeout requires an expiration tag'),
  notBanned: new Refusal('invalid', 'member is not banned'),
  notTimedOut: new Refusal('invalid', 'member is not timed out'),

  reportTag: new Refusal('invalid', 'missing or invalid report tag (expect 64-hex event id)'),
  statusMissing: new Refusal('invalid', 'missing status tag'),
  actionMissing: new Refusal('invalid', 'missing action tag'),
  invalidStatus: (status: string) => new Refusal('invalid', `invalid status: ${status.slice(0, 32)} (expect resolved|dismissed)`),
  invalidAction: (action: string, actions: readonly string[]) => new Refusal('invalid', `invalid action: ${action.slice(0, 32)} (expect ${actions.join('|')})`),
  dismissPairing: new Refusal('invalid', 'action `dismiss` pairs only with status `dismissed`'),
  reportNotFound: new Refusal('invalid', 'report not found in this community'),
  reportNotOpen: new Refusal('invalid', 'report is not open (already resolved or dismissed)'),
} as const;
