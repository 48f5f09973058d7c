/**
 * Ranks inside one channel (src/moderation/ranks.ts): each key's channel role and relay rank, and
 * the channel's owners, read in the command's own transaction, so a rank is decided on the state
 * the command changes.
 */
import { Injectable } from '@nestjs/common';
import { Kysely } from 'kysely';
import { DB } from '@buzz-relay/read-path';
import { ChannelStanding, Rank, rankInChannel } from '../moderation/ranks.js';
import { RelayAuthority } from '../moderation/relay-authority.service.js';
import { ChannelRepository } from './channel.repository.js';

/** Who holds what in a channel: each asked key's standing and rank, and whether it is a member. */
export interface ChannelRanking {
  rankOf(pubkey: string): Rank;
  isMember(pubkey: string): boolean;
}

@Injectable()
export class ChannelRanks {
  constructor(
    private readonly channels: ChannelRepository,
    private readonly authority: RelayAuthority,
  ) {}

  /** The ranks of `pubkeys` in the channel (two statements whatever their number). */
  async of(tx: Kysely<DB>, communityId: string, channelId: string, pubkeys: readonly string[]): Promise<ChannelRanking> {
    const roles = await this.channels.ownersAnd(tx, communityId, channelId, pubkeys);
    const owners = [...roles].filter(([, role]) => role === 'owner').map(([pk]) => pk);
    const relay = await this.authority.ranks(tx, communityId, [...pubkeys, ...owners]);
    const standing = (pubkey: string): ChannelStanding => ({ pubkey, relay: relay.get(pubkey)!, role: roles.get(pubkey) });
    const ownerStandings = owners.map(standing);
    return {
      rankOf: (pubkey) => rankInChannel(standing(pubkey), ownerStandings),
      isMember: (pubkey) => roles.has(pubkey),
    };
  }
}
