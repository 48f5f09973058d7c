/**
 * NIP-29 group state (relay.md §1.2, §5.2 step 14): after a group command changes a channel, the
 * relay signs fresh state events and they replace the previous versions in the same transaction
 * as the command, so state and command commit together.
 *
 * - 39000 metadata: `d`, `h`, `name`, `about` (when set), `public`|`private`, `open`|`closed`
 *   (open channels are joinable, private ones are not), `channel_type`, `archived` when archived.
 * - 39001 admins: `["p", pubkey, role]` for owners and admins.
 * - 39002 members: `["p", pubkey]` for every current member.
 * - 39003 roles: `["role", name, description]`, once at creation (the roles are fixed).
 *
 * Every state event is addressable with `d` = the group id (the channel id, or the NIP-29 id the
 * channel was created with: nostr/group-id.ts), carries it as `h` and is stored in that channel,
 * so it is exactly as visible as the channel: anyone in the community for an open channel,
 * members only for a private one, on REQ, on the bridge and on live fan-out.
 * A deleted group's state events are soft-deleted with it. They get no `event_mentions` rows:
 * being listed as a member is not a mention, and must not reach the mentions feeds.
 */
import { Inject, Injectable } from '@nestjs/common';
import { Kysely } from 'kysely';
import { NostrEvent } from '../nostr/nostr.types.js';
import { RelaySigner } from '../common/relay-signer.js';
import { ChannelMemberRole, DB } from '@buzz-relay/read-path';
import { ChannelDetails, ChannelRepository } from './channel.repository.js';
import { GROUP_KINDS } from './group-commands.service.js';

export const MEMBERSHIP_NOTICE_KINDS = { ADDED: 44100, REMOVED: 44101 } as const;
export const GROUP_STATE_KINDS = { METADATA: 39000, ADMINS: 39001, MEMBERS: 39002, ROLES: 39003 } as const;
const ALL_STATE_KINDS = Object.values(GROUP_STATE_KINDS);

const ROLE_DESCRIPTIONS: ReadonlyArray<readonly [ChannelMemberRole, string]> = [
  ['owner', 'Created the channel; may delete it and manage everyone'],
  ['admin', 'Manages metadata, members and messages'],
  ['member', 'Reads and posts'],
  ['guest', 'Invited participant'],
  ['bot', 'Automated participant'],
];

/** Which state events each command refreshes. */
const REFRESHED: Readonly<Record<number, readonly number[]>> = {
  [GROUP_KINDS.CREATE_GROUP]: ALL_STATE_KINDS,
  [GROUP_KINDS.EDIT_METADATA]: [GROUP_STATE_KINDS.METADATA],
  [GROUP_KINDS.PUT_USER]: [GROUP_STATE_KINDS.ADMINS, GROUP_STATE_KINDS.MEMBERS],
  [GROUP_KINDS.REMOVE_USER]: [GROUP_STATE_KINDS.ADMINS, GROUP_STATE_KINDS.MEMBERS],
  [GROUP_KINDS.JOIN]: [GROUP_STATE_KINDS.ADMINS, GROUP_STATE_KINDS.MEMBERS],
  [GROUP_KINDS.LEAVE]: [GROUP_STATE_KINDS.ADMINS, GROUP_STATE_KINDS.MEMBERS],
};

@Injectable()
export class GroupStateService {
  constructor(
    private readonly channels: ChannelRepository,
    @Inject(RelaySigner) private readonly signer: RelaySigner,
  ) {}

  get relayPubkey(): string {
    return this.signer.pubkey;
  }

  /**
   * Inside the command's transaction, after the command was applied: retires the previous
   * versions of the state events the command changes and returns their signed replacements,
   * which the caller stores in the channel and fans out after commit.
   */
  async refresh(tx: Kysely<DB>, communityId: string, commandKind: number, channelId: string): Promise<NostrEvent[]> {
    if (commandKind === GROUP_KINDS.DELETE_GROUP) {
      // The state's `d` is the group id (the deleted channel keeps its row).
      const groupId = (await this.channels.groupIdOf(tx, communityId, channelId)) ?? channelId;
      await this.channels.supersedeState(tx, communityId, groupId, this.signer.pubkey, ALL_STATE_KINDS);
      return [];
    }
    const kinds = REFRESHED[commandKind];
    if (!kinds) return [];
    await this.channels.lockGroupState(tx, communityId, channelId);
    const channel = await this.channels.details(tx, communityId, channelId);
    if (!channel) return [];
    const groupId = channel.groupId;
    const members = kinds.some((k) => k !== GROUP_STATE_KINDS.METADATA && k !== GROUP_STATE_KINDS.ROLES) ? await this.channels.members(tx, communityId, channelId) : [];
    // Versions of one coordinate are ordered by created_at: a refresh within the same second as
    // the previous one moves a second ahead, so the newest state always wins on every client.
    const previous = await this.channels.latestStateAt(tx, communityId, groupId, this.signer.pubkey, kinds);
    const createdAt = Math.max(Math.floor(Date.now() / 1000), previous === undefined ? 0 : previous + 1);
    await this.channels.supersedeState(tx, communityId, groupId, this.signer.pubkey, kinds);
    return kinds.map((kind) => this.signer.sign({ kind, created_at: createdAt, content: '', tags: [['d', groupId], ['h', groupId], ...stateTags(kind, channel, members)] }));
  }

  /**
   * Relay-signed 44100 (added) / 44101 (removed) notices for a private channel's membership
   * changes (relay.md §1.3): `["p", member]` and `["h", group id]` (as the command named it). They
   * are stored without a channel (a removed member must still read theirs) and are `#p`-gated:
   * only the member named (and the relay key) can read them.
   */
  membershipNotices(groupId: string, added: readonly string[], removed: readonly string[]): NostrEvent[] {
    const notice = (kind: number, pubkey: string) => this.signer.sign({ kind, content: '', tags: [['p', pubkey], ['h', groupId]] });
    return [...added.map((pk) => notice(MEMBERSHIP_NOTICE_KINDS.ADDED, pk)), ...removed.map((pk) => notice(MEMBERSHIP_NOTICE_KINDS.REMOVED, pk))];
  }
}

function stateTags(kind: number, channel: ChannelDetails, members: ReadonlyArray<{ pubkey: string; role: ChannelMemberRole }>): string[][] {
  switch (kind) {
    case GROUP_STATE_KINDS.METADATA:
      return [
        ['name', channel.name],
        ...(channel.about !== null ? [['about', channel.about]] : []),
        channel.visibility === 'private' ? ['private'] : ['public'],
        channel.visibility === 'private' ? ['closed'] : ['open'],
        ['channel_type', channel.channelType],
        ...(channel.archived ? [['archived']] : []),
      ];
    case GROUP_STATE_KINDS.ADMINS:
      return members.filter((m) => m.role === 'owner' || m.role === 'admin').map((m) => ['p', m.pubkey, m.role]);
    case GROUP_STATE_KINDS.MEMBERS:
      return members.map((m) => ['p', m.pubkey]);
    default:
      return ROLE_DESCRIPTIONS.map(([role, description]) => ['role', role, description]);
  }
}
