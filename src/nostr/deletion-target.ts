/**
 * What a deletion names (kind 5, and NIP-29's 9005): its one target, an event id or an
 * addressable coordinate, read from its tags before anything is looked up.
 */
import { EVENT_REFUSALS } from './event.refusals.js';
import { isHex64 } from './hex.js';
import type { NostrEvent } from './nostr.types.js';
import type { Refusal } from './refusal.js';

export type DeletionTarget =
  | { ok: true; id: string; coordinate?: undefined }
  | { ok: true; id?: undefined; coordinate: { kind: number; pubkey: string; d: string } }
  | { ok: false; reason: Refusal };

/** Kind 5 and 9005 (relay.md §1.3, §5.2 step 12): exactly one `e` or `a` tag, well formed. */
export function deletionTarget(ev: NostrEvent): DeletionTarget {
  const targets = ev.tags.filter((t) => t[0] === 'e' || t[0] === 'a');
  if (targets.length !== 1) return { ok: false, reason: EVENT_REFUSALS.deletionTargets(targets.length) };
  const [name, value] = targets[0];
  if (name === 'e') return isHex64(value) ? { ok: true, id: value } : { ok: false, reason: EVENT_REFUSALS.deletionEventId };
  const m = /^(\d{1,5}):([0-9a-f]{64}):(.*)$/s.exec(value ?? '');
  if (!m) return { ok: false, reason: EVENT_REFUSALS.deletionCoordinate };
  return { ok: true, coordinate: { kind: Number(m[1]), pubkey: m[2], d: m[3] } };
}
