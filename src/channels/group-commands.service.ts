/**
 * NIP-29 management kinds, applied inside the transaction that stores the
 * command event, so the state change and its event commit together.
 */
import { Injectable } from '@nestjs/common';
import { Kysely } from 'kysely';
import { NostrEvent } from '../common/nostr.types.js';
import { ChannelMemberRole, ChannelVisibility, DB } from '../database/database.types.js';
import { reject } from '../events/rejection.js';
import { ChannelRepository } from './channel.repository.js';

export const GROUP_KINDS = {
  PUT_USER: 9000,
  REMOVE_USER: 9001,
  EDIT_METADATA: 9002,
  DELETE_EVENT: 9005,
  CREATE_GROUP: 9007,
  DELETE_GROUP: 9008,
  JOIN: 9021,
  LEAVE: 9022,
} as const;

const ADMIN_ROLES: ReadonlySet<ChannelMemberRole> = new Set(['owner', 'admin']);
const HEX64 = /^[0-9a-f]{64}$/;

export interface GroupEffect {
  /** Pubkeys whose channel access changed (their cached access must be dropped). */
  readonly accessChanged: readonly string[] | 'everyone';
  /** Event ids soft-deleted by a 9005. */
  readonly deletedIds: readonly string[];
}

@Injectable()
export class GroupCommandService {
  constructor(private readonly channels: ChannelRepository) {}

  isGroupCommand(kind: number): boolean {
    return (Object.values(GROUP_KINDS) as number[]).includes(kind);
  }

  async apply(tx: Kysely<DB>, communityId: string, ev: NostrEvent, channelId: string): Promise<GroupEffect> {
    switch (ev.kind) {
      case GROUP_KINDS.CREATE_GROUP:
        return this.create(tx, communityId, ev, channelId);
      case GROUP_KINDS.JOIN:
        return this.join(tx, communityId, ev, channelId);
      case GROUP_KINDS.LEAVE:
        await this.channels.removeMember(tx, communityId, channelId, ev.pubkey);
        return { accessChanged: [ev.pubkey], deletedIds: [] };
      case GROUP_KINDS.PUT_USER:
        return this.putUsers(tx, communityId, ev, channelId);
      case GROUP_KINDS.REMOVE_USER:
        return this.removeUsers(tx, communityId, ev, channelId);
      case GROUP_KINDS.EDIT_METADATA:
        return this.editMetadata(tx, communityId, ev, channelId);
      case GROUP_KINDS.DELETE_GROUP:
        await this.requireRole(tx, communityId, channelId, ev.pubkey, new Set(['owner']));
        await this.channels.softDelete(tx, communityId, channelId);
        return { accessChanged: 'everyone', deletedIds: [] };
      case GROUP_KINDS.DELETE_EVENT:
        return this.deleteEvent(tx, communityId, ev, channelId);
      default:
        return { accessChanged: [], deletedIds: [] };
    }
  }

  private async create(tx: Kysely<DB>, communityId: string, ev: NostrEvent, channelId: string): Promise<GroupEffect> {
    const name = tagValue(ev, 'name')?.trim();
    if (!name) reject('invalid: channel name is required');
    const visibility = (tagValue(ev, 'visibility') ?? (ev.tags.some((t) => t[0] === 'private') ? 'private' : 'open')) as ChannelVisibility;
    if (visibility !== 'open' && visibility !== 'private') reject('invalid: visibility must be open or private');
    const channelType = tagValue(ev, 'channel_type') ?? 'stream';
    if (!['stream', 'forum', 'dm', 'workflow'].includes(channelType)) reject('invalid: unknown channel_type');
    const created = await this.channels.create(tx, communityId, {
      id: channelId,
      name: name!,
      about: tagValue(ev, 'about') ?? null,
      visibility,
      channelType: channelType as 'stream',
      createdBy: ev.pubkey,
    });
    if (!created) reject('duplicate: channel already exists');
    await this.channels.upsertMember(tx, communityId, channelId, ev.pubkey, 'owner');
    return { accessChanged: visibility === 'open' ? 'everyone' : [ev.pubkey], deletedIds: [] };
  }

  private async join(tx: Kysely<DB>, communityId: string, ev: NostrEvent, channelId: string): Promise<GroupEffect> {
    const ch = await this.channels.find(communityId, channelId, tx);
    if (!ch) reject('invalid: channel not found');
    if (ch!.visibility === 'private') reject('restricted: channel is private');
    await this.channels.upsertMember(tx, communityId, channelId, ev.pubkey, 'member');
    return { accessChanged: [ev.pubkey], deletedIds: [] };
  }

  private async putUsers(tx: Kysely<DB>, communityId: string, ev: NostrEvent, channelId: string): Promise<GroupEffect> {
    await this.requireRole(tx, communityId, channelId, ev.pubkey, ADMIN_ROLES);
    const targets = pTargets(ev);
    for (const t of targets) {
      const role = (t.role ?? 'member') as ChannelMemberRole;
      if (!['owner', 'admin', 'member', 'guest', 'bot'].includes(role)) reject('invalid: unknown member role');
      await this.channels.upsertMember(tx, communityId, channelId, t.pubkey, role);
    }
    return { accessChanged: targets.map((t) => t.pubkey), deletedIds: [] };
  }

  private async removeUsers(tx: Kysely<DB>, communityId: string, ev: NostrEvent, channelId: string): Promise<GroupEffect> {
    await this.requireRole(tx, communityId, channelId, ev.pubkey, ADMIN_ROLES);
    const targets = pTargets(ev);
    for (const t of targets) await this.channels.removeMember(tx, communityId, channelId, t.pubkey);
    return { accessChanged: targets.map((t) => t.pubkey), deletedIds: [] };
  }

  private async editMetadata(tx: Kysely<DB>, communityId: string, ev: NostrEvent, channelId: string): Promise<GroupEffect> {
    await this.requireRole(tx, communityId, channelId, ev.pubkey, ADMIN_ROLES);
    const visibility = tagValue(ev, 'visibility') as ChannelVisibility | undefined;
    if (visibility !== undefined && visibility !== 'open' && visibility !== 'private') reject('invalid: visibility must be open or private');
    const archived = ev.tags.some((t) => t[0] === 'archived') ? true : ev.tags.some((t) => t[0] === 'unarchived') ? false : undefined;
    await this.channels.updateMetadata(tx, communityId, channelId, { name: tagValue(ev, 'name'), about: tagValue(ev, 'about'), visibility, archived });
    return { accessChanged: visibility ? 'everyone' : [], deletedIds: [] };
  }

  private async deleteEvent(tx: Kysely<DB>, communityId: string, ev: NostrEvent, channelId: string): Promise<GroupEffect> {
    const ids = ev.tags.filter((t) => t[0] === 'e' && HEX64.test(t[1] ?? '')).map((t) => t[1]);
    if (ids.length !== 1) reject('invalid: delete-event needs exactly one e target');
    await this.requireRole(tx, communityId, channelId, ev.pubkey, ADMIN_ROLES);
    const res = await tx
      .updateTable('events')
      .set({ deleted_at: new Date() })
      .where('community_id', '=', communityId)
      .where('channel_id', '=', channelId)
      .where('id', '=', Buffer.from(ids[0], 'hex'))
      .where('deleted_at', 'is', null)
      .executeTakeFirst();
    return { accessChanged: [], deletedIds: Number(res.numUpdatedRows) > 0 ? ids : [] };
  }

  private async requireRole(tx: Kysely<DB>, communityId: string, channelId: string, pubkey: string, roles: ReadonlySet<ChannelMemberRole>): Promise<void> {
    const ch = await this.channels.find(communityId, channelId, tx);
    if (!ch) reject('invalid: channel not found');
    const role = await this.channels.memberRole(communityId, channelId, pubkey, tx);
    if (!role || !roles.has(role)) reject('restricted: channel admin role required');
  }
}

function tagValue(ev: NostrEvent, name: string): string | undefined {
  return ev.tags.find((t) => t[0] === name)?.[1];
}

function pTargets(ev: NostrEvent): Array<{ pubkey: string; role: string | undefined }> {
  const targets = ev.tags.filter((t) => t[0] === 'p' && HEX64.test(t[1] ?? '')).map((t) => ({ pubkey: t[1], role: t[2] }));
  if (targets.length === 0) reject('invalid: command needs at least one p tag');
  return targets;
}
