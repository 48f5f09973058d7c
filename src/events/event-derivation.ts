/**
 * What ingest derives from an event's tags: its channel, its NIP-10 thread
 * references and its mentions. Pure functions; lookups happen in the caller.
 */
import { NostrEvent } from '../nostr/nostr.types.js';
import { channelIdOf } from '../nostr/group-id.js';
import { EVENT_REFUSALS } from '../nostr/event.refusals.js';
import { Refusal } from '../nostr/refusal.js';
import { INGEST_REFUSALS } from './ingest.refusals.js';
import { deletionTarget } from '../nostr/deletion-target.js';
import { GLOBAL_ONLY_KINDS, KIND, NIP29_COMMAND_KINDS, REQUIRES_CHANNEL_KINDS } from '../nostr/kinds.js';
import { isHex64 } from '../nostr/hex.js';

export type ChannelDerivation =
  | { ok: true; channelId: string | null; fromTarget: string | undefined; fromCoordinate?: { kind: number; pubkey: string; d: string } }
  | { ok: false; reason: Refusal };

/**
 * Reactions and deletions take the channel of their target (`fromTarget` or
 * `fromCoordinate` names it for the caller to look up); global-only kinds have
 * none; NIP-29 commands use their (first) `h` tag, which must be a group id; the
 * rest use the first `h` tag that is one. A group id names its channel by group-id.ts's rule.
 */
export function deriveChannel(event: NostrEvent): ChannelDerivation {
  if (event.kind === 7) {
    const target = lastHexTag(event, 'e');
    if (!target) return { ok: false, reason: INGEST_REFUSALS.reactionWithoutTarget };
    return { ok: true, channelId: null, fromTarget: target };
  }
  if (event.kind === 5) {
    const target = deletionTarget(event);
    if (!target.ok) return target;
    return { ok: true, channelId: null, fromTarget: target.id, fromCoordinate: target.coordinate };
  }
  if (GLOBAL_ONLY_KINDS.has(event.kind)) return { ok: true, channelId: null, fromTarget: undefined };
  if (event.kind === KIND.COMMENT && !event.tags.some((t) => t[0] === 'h' && channelIdOf(t[1] ?? '') !== undefined)) {
    // NIP-22: the parent is the lowercase `e` (clients such as NDK add no `h`); the comment lives
    // where its parent does. A comment on something else (`a`, `i`) is a global event.
    const parent = lastHexTag(event, 'e');
    return { ok: true, channelId: null, fromTarget: parent };
  }
  if (NIP29_COMMAND_KINDS.has(event.kind)) {
    // A NIP-29 client's group id must name a channel here: never stored as a global event.
    const h = event.tags.find((t) => t[0] === 'h');
    if (!h) return { ok: false, reason: INGEST_REFUSALS.channelTagMissing };
    const channelId = channelIdOf(h[1] ?? '');
    if (channelId === undefined) return { ok: false, reason: EVENT_REFUSALS.badGroupId };
    return { ok: true, channelId, fromTarget: undefined };
  }
  let h: string | null = null;
  for (const t of event.tags) if (t[0] === 'h' && (h = channelIdOf(t[1] ?? '') ?? null) !== null) break;
  if (!h && REQUIRES_CHANNEL_KINDS.has(event.kind)) {
    // An h tag that is there but names no channel id is said as such, not as a missing tag.
    const named = event.tags.some((t) => t[0] === 'h');
    return { ok: false, reason: named ? EVENT_REFUSALS.badGroupId : INGEST_REFUSALS.channelTagMissing };
  }
  return { ok: true, channelId: h, fromTarget: undefined };
}

/**
 * NIP-10: marked `root`/`reply` tags win; otherwise the deprecated positional
 * form (first e = root, last e = reply). Returns the direct parent, or null for
 * a top-level message.
 */
export function threadRefsOf(event: NostrEvent): { parent: string; root: string } | null {
  const eTags = event.tags.filter((t) => t[0] === 'e' && isHex64(t[1]));
  if (eTags.length === 0) return null;
  const marked = (m: string) => eTags.find((t) => t[3] === m)?.[1];
  const root = marked('root');
  const reply = marked('reply');
  if (root || reply) return { parent: reply ?? root!, root: root ?? reply! };
  return { parent: eTags[eTags.length - 1][1], root: eTags[0][1] };
}

/** Lowercase pubkeys of well-formed `p` tags, each once. */
export function mentionsOf(event: NostrEvent): string[] {
  const out = new Set<string>();
  for (const t of event.tags) if (t[0] === 'p' && isHex64(t[1])) out.add(t[1]);
  return [...out];
}

/** The value of the last `name` tag whose value is 64 lowercase hex characters. */
export function lastHexTag(event: NostrEvent, name: string): string | undefined {
  for (let i = event.tags.length - 1; i >= 0; i--) {
    const t = event.tags[i];
    if (t[0] === name && isHex64(t[1])) return t[1];
  }
  return undefined;
}

