/**
 * The one rank order of the community (docs/moderation.md, "Ranks"), used by relay moderation
 * (9040–9044) and by the NIP-29 channel commands (9000–9009) alike:
 *
 *   relay owner (RELAY_OWNER_PUBKEY, operators, NIP-43 `owner` rows)
 *   > relay admin (NIP-43 `admin` rows)
 *   > channel owner > channel admin > member (`member`, `guest`, `bot`, or a relay member) > nobody
 *
 * A command acts on a key only if its sender outranks that key (peers do not act on each other).
 * Relay-wide rank counts inside a channel only where it outranks every other owner of the channel,
 * so a relay admin can take over a member's channel but not the relay owner's or a peer's.
 */
import type { ChannelMemberRole } from '@buzz-relay/read-path';
import type { Authority } from './relay-authority.service.js';

export const RANK = {
  none: 0,
  member: 1,
  channelAdmin: 2,
  channelOwner: 3,
  relayAdmin: 4,
  relayOwner: 5,
} as const;

export type Rank = (typeof RANK)[keyof typeof RANK];

export function outranks(actor: Rank, target: Rank): boolean {
  return actor > target;
}

/** A key's rank from its relay authority alone. */
export function relayRank(authority: Authority): Rank {
  if (authority === 'owner') return RANK.relayOwner;
  if (authority === 'admin') return RANK.relayAdmin;
  return authority === 'member' ? RANK.member : RANK.none;
}

/** The rank a channel role carries; undefined (not a member) is none. */
export function channelRoleRank(role: ChannelMemberRole | undefined): Rank {
  if (role === 'owner') return RANK.channelOwner;
  if (role === 'admin') return RANK.channelAdmin;
  return role === undefined ? RANK.none : RANK.member;
}

/** What rankInChannel needs to know of one key. */
export interface ChannelStanding {
  readonly pubkey: string;
  readonly relay: Rank;
  readonly role: ChannelMemberRole | undefined;
}

/**
 * A key's rank in one channel: its channel role's, or its relay rank when that outranks every
 * other owner of the channel (an owner weighs its own relay rank, at least channel owner).
 */
export function rankInChannel(key: ChannelStanding, owners: readonly ChannelStanding[]): Rank {
  const guard = Math.max(RANK.none, ...owners.filter((o) => o.pubkey !== key.pubkey).map((o) => Math.max(o.relay, RANK.channelOwner)));
  const fromRole = channelRoleRank(key.role);
  return outranks(key.relay, guard as Rank) && key.relay > fromRole ? key.relay : fromRole;
}
