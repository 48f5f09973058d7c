/**
 * A community ban or timeout of the key that asks (relay.md §2.5, §2.9, §5.2): the same words at
 * AUTH, on a write, on a read and over HTTP.
 */
import { Refusal } from '../nostr/refusal.js';

export const BAN_REFUSALS = {
  banned: new Refusal('blocked', 'you are banned from this community'),
  /** A write block only: a timed-out key still reads. */
  timedOut: (untilSecs: number) => new Refusal('restricted', `you are timed out until ${untilSecs}`),
} as const;
