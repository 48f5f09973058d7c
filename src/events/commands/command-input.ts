/**
 * Shared checks of the executed (never stored) command kinds: a fresh timestamp, since a
 * command that is not stored can only be replayed, and exactly one well-formed target `p` tag.
 */
import { NostrEvent } from '../../nostr/nostr.types.js';
import { reject } from '../rejection.js';
import { lowerHex64 } from '../../nostr/hex.js';

/** A command must be signed within this many seconds of the relay's clock (NIP-42's window twice over). */
export const COMMAND_MAX_SKEW_SECS = 120;

export function requireFreshCommand(event: NostrEvent, nowSecs = Math.floor(Date.now() / 1000)): void {
  const delta = event.created_at - nowSecs;
  if (Math.abs(delta) > COMMAND_MAX_SKEW_SECS) {
    reject(`invalid: event timestamp out of range: created_at=${event.created_at}, now=${nowSecs}, delta=${delta}s (max ±${COMMAND_MAX_SKEW_SECS}s)`);
  }
}

/** The one target pubkey: exactly one `p` tag, 64 lowercase-or-uppercase hex, returned lowercase. */
export function targetPubkey(event: NostrEvent): string {
  const tags = event.tags.filter((t) => t[0] === 'p');
  const value = tags.length === 1 ? tags[0][1] : undefined;
  const pubkey = lowerHex64(value);
  if (pubkey === undefined) reject('invalid: missing or invalid p tag');
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
  if (!/^\d{1,12}$/.test(raw)) reject(`invalid: invalid expiration tag: ${raw.slice(0, 32)}`);
  const secs = Number(raw);
  if (secs <= nowSecs) reject('invalid: expiration must be in the future');
  return secs;
}
