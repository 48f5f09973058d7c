/**
 * Shared checks of the executed (never stored) command kinds: a fresh timestamp, since a
 * command that is not stored can only be replayed, and exactly one well-formed target `p` tag.
 */
import { NostrEvent } from '../nostr/nostr.types.js';
import { reject } from '../nostr/refusal.js';
import { COMMAND_REFUSALS } from './command.refusals.js';
import { lowerHex64 } from '../nostr/hex.js';

/** A command must be signed within this many seconds of the relay's clock (NIP-42's window twice over). */
export const COMMAND_MAX_SKEW_SECS = 120;

export function requireFreshCommand(event: NostrEvent, nowSecs = Math.floor(Date.now() / 1000)): void {
  const delta = event.created_at - nowSecs;
  if (Math.abs(delta) > COMMAND_MAX_SKEW_SECS) {
    reject(COMMAND_REFUSALS.staleTimestamp(event.created_at, nowSecs, delta, COMMAND_MAX_SKEW_SECS));
  }
}

/** The one target pubkey: exactly one `p` tag, 64 lowercase-or-uppercase hex, returned lowercase. */
export function targetPubkey(event: NostrEvent): string {
  const tags = event.tags.filter((t) => t[0] === 'p');
  const value = tags.length === 1 ? tags[0][1] : undefined;
  const pubkey = lowerHex64(value);
  if (pubkey === undefined) reject(COMMAND_REFUSALS.targetPubkey);
  return pubkey;
}

/** The value of the first tag named `name`, if any. */
export function tagValue(event: NostrEvent, name: string): string | undefined {
  return event.tags.find((t) => t[0] === name)?.[1];
}

/** An `expiration` tag as unix seconds: absent = undefined; it must be a whole number in the future. */
export function expirationOf(event: NostrEvent, nowSecs = Math.floor(Date.now() / 1000)): number | undefined {
  const raw = tagValue(event, 'expiration');
  if (raw === undefined) return undefined;
  if (!/^\d{1,12}$/.test(raw)) reject(COMMAND_REFUSALS.expirationTag(raw));
  const secs = Number(raw);
  if (secs <= nowSecs) reject(COMMAND_REFUSALS.expirationPast);
  return secs;
}
