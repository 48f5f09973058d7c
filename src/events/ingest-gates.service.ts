/**
 * The access gates of the write path (relay.md §5.2 steps 8–10), all read on
 * the writer: the author's moderation state, then whether the author may post
 * in the event's channel.
 */
import { Injectable } from '@nestjs/common';
import { ChannelRepository } from '../channels/channel.repository.js';
import { GROUP_KINDS } from '../channels/group-commands.service.js';
import { NostrEvent } from '../common/nostr.types.js';
import { ModerationRepository } from '../moderation/moderation.repository.js';
import { reject } from './rejection.js';

/** Kinds whose own validators decide channel access. */
const SELF_VALIDATING_KINDS = new Set<number>([
  GROUP_KINDS.JOIN,
  GROUP_KINDS.CREATE_GROUP,
  40003,
  GROUP_KINDS.EDIT_METADATA,
  GROUP_KINDS.DELETE_EVENT,
  GROUP_KINDS.DELETE_GROUP,
]);

@Injectable()
export class IngestGates {
  constructor(
    private readonly moderation: ModerationRepository,
    private readonly channels: ChannelRepository,
  ) {}

  async moderationGate(communityId: string, pubkey: string): Promise<void> {
    const r = await this.moderation.restrictionOf(communityId, pubkey);
    if (r.kind === 'banned') reject('blocked: you are banned from this community');
    if (r.kind === 'timed_out') reject(`restricted: you are timed out until ${r.untilSecs}`);
  }

  /** Open channels take posts from anyone in the community; private ones from members only. */
  async channelGate(communityId: string, event: NostrEvent, channelId: string | null): Promise<void> {
    if (channelId === null || SELF_VALIDATING_KINDS.has(event.kind)) return;
    const ch = await this.channels.find(communityId, channelId);
    if (ch?.archived) reject('invalid: channel is archived');
    if (ch?.visibility === 'open') return;
    const role = ch ? await this.channels.memberRole(communityId, channelId, event.pubkey) : undefined;
    if (!role) reject('restricted: not a channel member');
  }
}
