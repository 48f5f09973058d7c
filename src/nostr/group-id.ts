/**
 * NIP-29 group ids and the schema's channel ids, by one rule (docs/moderation.md, "Group ids").
 *
 * A channel is stored under a UUID. A group id that is a UUID (in any case) is that channel's id,
 * in lower case. Any other group id made of letters, digits, `-` and `_` (NIP-29's characters,
 * and the mixed case NDK's default ids use), at most 64 of them, names the channel whose id is its
 * name-based UUID (RFC 9562 version 5, SHA-1) in the relay's own namespace: every pod maps it the
 * same way with no lookup, and distinct ids never share a channel. The channel remembers the id
 * its creator chose (`channels.group_id`), so the state the relay signs carries it in `d` and `h`.
 * Anything else is no group id (EVENT_REFUSALS.badGroupId).
 */
import { createHash } from 'node:crypto';

/** The namespace of group ids' channel ids; changing it would move every such group to a new channel. */
export const GROUP_ID_NAMESPACE = '056ceca9-ba79-40dd-a7ea-44d9b3552f43';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const GROUP_ID = /^[A-Za-z0-9_-]{1,64}$/;

/** Whether `value` is a UUID (any case). */
export function isUuid(value: string): boolean {
  return value.length === 36 && UUID.test(value);
}

/**
 * Whether `value` is a UUID in lower case, the form Postgres prints a `uuid` in: a stored channel
 * or community id, as {@link channelIdOf} returns it. Mixed case here is no id of ours.
 */
export function isCanonicalUuid(value: string): boolean {
  return isUuid(value) && value === value.toLowerCase();
}

/** Whether `value` is a group id that is not a UUID (its channel id is derived). */
export function isNamedGroupId(value: string): boolean {
  return !isUuid(value) && GROUP_ID.test(value);
}

const derived = new Map<string, string>();
const DERIVED_CACHE_MAX = 10_000;

/** The channel id a group id names; undefined when `groupId` is no group id. */
export function channelIdOf(groupId: string): string | undefined {
  if (isUuid(groupId)) return groupId.toLowerCase();
  if (!GROUP_ID.test(groupId)) return undefined;
  let id = derived.get(groupId);
  if (id === undefined) {
    id = uuidV5(GROUP_ID_NAMESPACE, groupId);
    // Live fan-out asks for the same few ids again and again; the cache only saves the hash.
    if (derived.size >= DERIVED_CACHE_MAX) derived.clear();
    derived.set(groupId, id);
  }
  return id;
}

/**
 * RFC 9562 §5.5: SHA-1 of the namespace's 16 bytes and the name's UTF-8, the first 16 bytes with
 * the version (5) and the variant (10) written in. Ten lines where the `uuid` package would be a
 * dependency for one function.
 */
export function uuidV5(namespace: string, name: string): string {
  const bytes = createHash('sha1').update(Buffer.from(namespace.replaceAll('-', ''), 'hex')).update(name, 'utf8').digest().subarray(0, 16);
  bytes[6] = (bytes[6] & 0x0f) | 0x50;
  bytes[8] = (bytes[8] & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** The channels `#h` values name, each once; a value that is no group id names none. */
export function channelIdsOf(values: readonly string[]): string[] {
  const ids = new Set<string>();
  for (const v of values) {
    const id = channelIdOf(v);
    if (id !== undefined) ids.add(id);
  }
  return [...ids];
}
