/**
 * NIP-29 management kinds, applied inside the transaction that stores the
 * command event, so the state change and its event commit together.
 *
 * Who may do what (docs/moderation.md, "NIP-29 groups" and "Ranks"), by the sender's rank in the
 * channel (ChannelRanks, src/moderation/ranks.ts: a channel role, or relay-wide rank where it
 * outranks every other owner of the channel):
 * - `admin` commands (9000 put-user, 9001 remove-user, 9002 edit-metadata, 9005 delete-event,
 *   9009 create-invite): channel admin rank or above;
 * - `owner` commands (9008 delete-group; granting an `owner` role): channel owner rank or above;
 * - changing or removing another current member: a rank above theirs; a role granted is at most
 *   the sender's own rank;
 * - anyone: 9007 create (the creator becomes its owner), 9021 join (open channels, or a private
 *   one with an unspent invite code), 9022 leave.
 */
import { Injectable } from '@nestjs/common';
import { Kysely } from 'kysely';
import { NostrEvent } from '../nostr/nostr.types.js';
import { ChannelMemberRole, ChannelVisibility, DB } from '@buzz-relay/read-path';
import { deletionTarget } from '../nostr/deletion-target.js';
import { NIP29_COMMAND_KINDS } from '../nostr/kinds.js';
import { reject } from '../nostr/refusal.js';
import { GROUP_COMMAND_REFUSALS } from './group-commands.refusals.js';
import { channelRoleRank, outranks, RANK } from '../moderation/ranks.js';
import { ChannelRanking, ChannelRanks } from './channel-ranks.service.js';
import { ChannelRepository } from './channel.repository.js';
import { isNamedGroupId } from '../nostr/group-id.js';
import { TtlMap } from '../redis/ttl-map.js';
import { isHex64 } from '../nostr/hex.js';

export const GROUP_KINDS = {
  PUT_USER: 9000,
  REMOVE_USER: 9001,
  EDIT_METADATA: 9002,
  DELETE_EVENT: 9005,
  CREATE_GROUP: 9007,
  DELETE_GROUP: 9008,
  CREATE_INVITE: 9009,
  JOIN: 9021,
  LEAVE: 9022,
} as const;


const MEMBER_ROLES: ReadonlySet<string> = new Set<ChannelMemberRole>(['owner', 'admin', 'member', 'guest', 'bot']);

/** Invite bounds: codes per 9009, code length, unspent codes per channel, lifetime. */
export const INVITE_LIMITS = {
  codesPerEvent: 10,
  /** 12 characters of a URL-safe alphabet hold some 70 bits: not guessable within the failed-join window. */
  codeMinLength: 12,
  codeMaxLength: 128,
  /** Failed invite codes a channel takes per window (on this pod) before its code joins are refused until the window ends. */
  failedJoinsPerWindow: 20,
  failedJoinWindowSecs: 600,
  openPerChannel: 100,
  defaultTtlSecs: 7 * 24 * 3600,
  maxTtlSecs: 30 * 24 * 3600,
} as const;

type Authority = 'admin' | 'owner';

export interface GroupEffect {
  /** Pubkeys whose channel access changed (their cached access must be dropped). */
  readonly accessChanged: readonly string[] | 'everyone';
  /** Event ids soft-deleted by a 9005. */
  readonly deletedIds: readonly string[];
  /** Who was added to / removed from a private channel: they get relay-signed 44100 / 44101. */
  readonly added: readonly string[];
  readonly removed: readonly string[];
}

const NO_EFFECT: GroupEffect = { accessChanged: [], deletedIds: [], added: [], removed: [] };

@Injectable()
export class GroupCommandService {
  /**
   * Failed invite codes per channel in the current window: keys are free, so guessing is bounded
   * per channel, not per key. A channel's count is kept until failedJoinWindowSecs after its
   * latest failure (refused joins add none), so a locked channel opens again that long after the
   * failure that locked it; each pod counts its own.
   */
  private readonly failedJoins = new TtlMap<number>(INVITE_LIMITS.failedJoinWindowSecs * 1000, 100_000);

  constructor(
    private readonly channels: ChannelRepository,
    private readonly ranks: ChannelRanks,
  ) {}

  isGroupCommand(kind: number): boolean {
    return NIP29_COMMAND_KINDS.has(kind);
  }

  async apply(tx: Kysely<DB>, communityId: string, ev: NostrEvent, channelId: string): Promise<GroupEffect> {
    switch (ev.kind) {
      case GROUP_KINDS.CREATE_GROUP:
        return this.create(tx, communityId, ev, channelId);
      case GROUP_KINDS.JOIN:
        return this.join(tx, communityId, ev, channelId);
      case GROUP_KINDS.LEAVE:
        return this.leave(tx, communityId, ev, channelId);
      case GROUP_KINDS.PUT_USER:
        return this.putUsers(tx, communityId, ev, channelId);
      case GROUP_KINDS.REMOVE_USER:
        return this.removeUsers(tx, communityId, ev, channelId);
      case GROUP_KINDS.EDIT_METADATA:
        return this.editMetadata(tx, communityId, ev, channelId);
      case GROUP_KINDS.DELETE_GROUP:
        await this.require(tx, communityId, channelId, ev.pubkey, 'owner');
        await this.channels.softDelete(tx, communityId, channelId);
        return { ...NO_EFFECT, accessChanged: 'everyone' };
      case GROUP_KINDS.DELETE_EVENT:
        return this.deleteEvent(tx, communityId, ev, channelId);
      case GROUP_KINDS.CREATE_INVITE:
        return this.createInvite(tx, communityId, ev, channelId);
      default:
        return NO_EFFECT;
    }
  }

  /**
   * 9007: `name` is optional (NIP-29 clients name the group afterwards with 9002); without one
   * the channel is named after its id. Visibility from `["visibility", open|private]` or the
   * NIP-29 tags (see {@link visibilityOf}); open when neither is given.
   */
  private async create(tx: Kysely<DB>, communityId: string, ev: NostrEvent, channelId: string): Promise<GroupEffect> {
    const nameTag = ev.tags.find((t) => t[0] === 'name');
    const name = nameTag?.[1]?.trim();
    if (nameTag && !name) reject(GROUP_COMMAND_REFUSALS.emptyName);
    const visibility = visibilityOf(ev) ?? 'open';
    const channelType = tagValue(ev, 'channel_type') ?? 'stream';
    if (!['stream', 'forum', 'dm', 'workflow'].includes(channelType)) reject(GROUP_COMMAND_REFUSALS.unknownChannelType);
    const h = ev.tags.find((t) => t[0] === 'h')?.[1];
    const groupId = h !== undefined && isNamedGroupId(h) ? h : undefined;
    const created = await this.channels.create(tx, communityId, {
      id: channelId,
      groupId,
      name: name ?? groupId ?? channelId,
      about: tagValue(ev, 'about') ?? null,
      visibility,
      channelType: channelType as 'stream',
      createdBy: ev.pubkey,
    });
    if (!created) reject(GROUP_COMMAND_REFUSALS.channelExists);
    await this.channels.upsertMember(tx, communityId, channelId, ev.pubkey, 'owner');
    return { ...NO_EFFECT, accessChanged: visibility === 'open' ? 'everyone' : [ev.pubkey] };
  }

  /** 9021: open channels admit anyone; a private one only with an unspent, unexpired invite code (spent here). */
  private async join(tx: Kysely<DB>, communityId: string, ev: NostrEvent, channelId: string): Promise<GroupEffect> {
    const ch = await this.channels.find(communityId, channelId, tx);
    if (!ch) reject(GROUP_COMMAND_REFUSALS.channelNotFound);
    if (await this.channels.memberRole(communityId, channelId, ev.pubkey, tx)) reject(GROUP_COMMAND_REFUSALS.alreadyMember);
    if (ch!.visibility === 'private') {
      const code = tagValue(ev, 'code');
      if (code === undefined) reject(GROUP_COMMAND_REFUSALS.privateChannel);
      const key = `${communityId}/${channelId}`;
      if ((this.failedJoins.get(key) ?? 0) >= INVITE_LIMITS.failedJoinsPerWindow) reject(GROUP_COMMAND_REFUSALS.failedJoins);
      const spent = await this.channels.spendInvite(tx, communityId, channelId, code!, ev.pubkey);
      if (!spent) {
        this.failedJoins.set(key, (this.failedJoins.get(key) ?? 0) + 1);
        reject(GROUP_COMMAND_REFUSALS.badInviteCode);
      }
    }
    await this.channels.upsertMember(tx, communityId, channelId, ev.pubkey, 'member');
    return { ...NO_EFFECT, accessChanged: [ev.pubkey], added: ch!.visibility === 'private' ? [ev.pubkey] : [] };
  }

  /** 9022: a member of a private channel who leaves gets a 44101, as one removed by an admin does. */
  private async leave(tx: Kysely<DB>, communityId: string, ev: NostrEvent, channelId: string): Promise<GroupEffect> {
    const was = await this.channels.memberRole(communityId, channelId, ev.pubkey, tx);
    await this.channels.removeMember(tx, communityId, channelId, ev.pubkey);
    const priv = was !== undefined && (await this.channels.find(communityId, channelId, tx))?.visibility === 'private';
    return { ...NO_EFFECT, accessChanged: [ev.pubkey], removed: priv ? [ev.pubkey] : [] };
  }

  /** 9000: adds members or changes roles, each a role no higher than the sender's own rank. */
  private async putUsers(tx: Kysely<DB>, communityId: string, ev: NostrEvent, channelId: string): Promise<GroupEffect> {
    const ranking = await this.require(tx, communityId, channelId, ev.pubkey, 'admin', pKeys(ev));
    const targets = pTargets(ev);
    for (const t of targets) if (!MEMBER_ROLES.has(t.role ?? 'member')) reject(GROUP_COMMAND_REFUSALS.unknownMemberRole);
    const added: string[] = [];
    for (const t of targets) {
      const role = (t.role ?? 'member') as ChannelMemberRole;
      if (channelRoleRank(role) > ranking.rankOf(ev.pubkey)) reject(GROUP_COMMAND_REFUSALS.ownerRequired);
      requireOutranks(ranking, ev.pubkey, t.pubkey);
      if (!ranking.isMember(t.pubkey)) added.push(t.pubkey);
      await this.channels.upsertMember(tx, communityId, channelId, t.pubkey, role);
    }
    const priv = (await this.channels.find(communityId, channelId, tx))?.visibility === 'private';
    return { ...NO_EFFECT, accessChanged: targets.map((t) => t.pubkey), added: priv ? added : [] };
  }

  /** 9001: removes members of a lower rank than the sender's (or the sender itself). */
  private async removeUsers(tx: Kysely<DB>, communityId: string, ev: NostrEvent, channelId: string): Promise<GroupEffect> {
    const ranking = await this.require(tx, communityId, channelId, ev.pubkey, 'admin', pKeys(ev));
    const targets = pTargets(ev);
    const removed: string[] = [];
    for (const t of targets) {
      requireOutranks(ranking, ev.pubkey, t.pubkey);
      if (ranking.isMember(t.pubkey)) removed.push(t.pubkey);
      await this.channels.removeMember(tx, communityId, channelId, t.pubkey);
    }
    const priv = (await this.channels.find(communityId, channelId, tx))?.visibility === 'private';
    return { ...NO_EFFECT, accessChanged: targets.map((t) => t.pubkey), removed: priv ? removed : [] };
  }

  private async editMetadata(tx: Kysely<DB>, communityId: string, ev: NostrEvent, channelId: string): Promise<GroupEffect> {
    await this.require(tx, communityId, channelId, ev.pubkey, 'admin');
    const visibility = visibilityOf(ev);
    const name = tagValue(ev, 'name');
    if (name !== undefined && !name.trim()) reject(GROUP_COMMAND_REFUSALS.emptyName);
    const archived = ev.tags.some((t) => t[0] === 'archived') ? true : ev.tags.some((t) => t[0] === 'unarchived') ? false : undefined;
    await this.channels.updateMetadata(tx, communityId, channelId, { name: name?.trim(), about: tagValue(ev, 'about'), visibility, archived });
    return { ...NO_EFFECT, accessChanged: visibility ? 'everyone' : [] };
  }

  /** 9005: exactly one target, an event (`e`) or an addressable coordinate (`a`) of this channel. */
  private async deleteEvent(tx: Kysely<DB>, communityId: string, ev: NostrEvent, channelId: string): Promise<GroupEffect> {
    const target = deletionTarget(ev);
    if (!target.ok) return reject(target.reason);
    await this.require(tx, communityId, channelId, ev.pubkey, 'admin');
    const deletedIds = target.id
      ? await this.channels.softDeleteInChannel(tx, communityId, channelId, { id: target.id })
      : await this.channels.softDeleteInChannel(tx, communityId, channelId, { coordinate: target.coordinate!, until: ev.created_at });
    return { ...NO_EFFECT, deletedIds };
  }

  /**
   * 9009: 1–10 `code` tags, each 12–128 characters, single-use. They expire after 7 days, or at the
   * event's NIP-40 `expiration` when that is sooner (at most 30 days ahead); a channel holds at
   * most 100 unspent, unexpired codes.
   */
  private async createInvite(tx: Kysely<DB>, communityId: string, ev: NostrEvent, channelId: string): Promise<GroupEffect> {
    await this.require(tx, communityId, channelId, ev.pubkey, 'admin');
    const named = ev.tags.filter((t) => t[0] === 'code').map((t) => t[1] ?? '');
    // Without a `code` tag (NIP-29 names none; applesauce's CreateGroupInviteFactory adds none)
    // the invite's code is its own event id: its signer knows it, and so do the channel's
    // members, who can read the stored 9009, as they can read any code.
    const codes = named.length > 0 ? named : [ev.id];
    if (codes.length > INVITE_LIMITS.codesPerEvent) reject(GROUP_COMMAND_REFUSALS.codesPerEvent(INVITE_LIMITS.codesPerEvent));
    if (codes.some((c) => c.length < INVITE_LIMITS.codeMinLength || c.length > INVITE_LIMITS.codeMaxLength)) {
      reject(GROUP_COMMAND_REFUSALS.codeLength(INVITE_LIMITS.codeMinLength, INVITE_LIMITS.codeMaxLength));
    }
    if (new Set(codes).size !== codes.length) reject(GROUP_COMMAND_REFUSALS.duplicateCode);
    const now = Math.floor(Date.now() / 1000);
    const expirationTag = tagValue(ev, 'expiration');
    let expiresAt = now + INVITE_LIMITS.defaultTtlSecs;
    if (expirationTag !== undefined) {
      const at = /^\d{1,12}$/.test(expirationTag) ? Number(expirationTag) : NaN;
      if (!(at > now)) reject(GROUP_COMMAND_REFUSALS.expirationNotFuture);
      if (at > now + INVITE_LIMITS.maxTtlSecs) reject(GROUP_COMMAND_REFUSALS.expirationTooFar(INVITE_LIMITS.maxTtlSecs / 86400));
      expiresAt = Math.min(expiresAt, at);
    }
    await this.channels.lockInvites(tx, communityId, channelId);
    const open = await this.channels.openInviteCount(tx, communityId, channelId);
    if (open + codes.length > INVITE_LIMITS.openPerChannel) reject(GROUP_COMMAND_REFUSALS.openCodes(INVITE_LIMITS.openPerChannel));
    const fresh = await this.channels.createInvites(tx, communityId, channelId, { codes, createdBy: ev.pubkey, eventId: ev.id, expiresAtSecs: expiresAt });
    if (!fresh) reject(GROUP_COMMAND_REFUSALS.codeExists);
    return NO_EFFECT;
  }

  /**
   * Requires the sender's rank in the channel to be at least channel `needed`; returns the ranks
   * of the sender and of `targets`, read in this transaction.
   */
  private async require(tx: Kysely<DB>, communityId: string, channelId: string, pubkey: string, needed: Authority, targets: readonly string[] = []): Promise<ChannelRanking> {
    const ch = await this.channels.find(communityId, channelId, tx);
    if (!ch) reject(GROUP_COMMAND_REFUSALS.channelNotFound);
    const ranking = await this.ranks.of(tx, communityId, channelId, [pubkey, ...targets]);
    if (ranking.rankOf(pubkey) < (needed === 'owner' ? RANK.channelOwner : RANK.channelAdmin)) reject(needed === 'owner' ? GROUP_COMMAND_REFUSALS.ownerRequired : GROUP_COMMAND_REFUSALS.adminRequired);
    return ranking;
  }
}

/**
 * Changing or removing a current member other than oneself takes a rank above theirs. A sender
 * below channel owner rank acting on an owner-ranked key is told it needs the owner role.
 */
function requireOutranks(ranking: ChannelRanking, actor: string, target: string): void {
  if (target === actor || !ranking.isMember(target)) return;
  const mine = ranking.rankOf(actor);
  const theirs = ranking.rankOf(target);
  if (outranks(mine, theirs)) return;
  reject(theirs >= RANK.channelOwner && mine < RANK.channelOwner ? GROUP_COMMAND_REFUSALS.ownerRequired : GROUP_COMMAND_REFUSALS.higherRank);
}

function tagValue(ev: NostrEvent, name: string): string | undefined {
  return ev.tags.find((t) => t[0] === name)?.[1];
}

/**
 * The visibility a 9007/9002 asks for: the spec's `["visibility", open|private]` wins; otherwise
 * NIP-29's bare tags, where `private` (members read) or `closed` (no joining) makes the channel
 * private and `public` or `open` makes it open. A channel here is either both open and public or
 * both private and closed, so a mixed pair (`public` + `closed`) resolves to the restrictive side.
 * Undefined when the event names none.
 */
export function visibilityOf(ev: NostrEvent): ChannelVisibility | undefined {
  const explicit = tagValue(ev, 'visibility');
  if (explicit !== undefined) {
    if (explicit !== 'open' && explicit !== 'private') reject(GROUP_COMMAND_REFUSALS.visibility);
    return explicit;
  }
  const has = (name: string) => ev.tags.some((t) => t[0] === name);
  if (has('private') || has('closed')) return 'private';
  if (has('public') || has('open')) return 'open';
  return undefined;
}

function pTargets(ev: NostrEvent): Array<{ pubkey: string; role: string | undefined }> {
  const targets = ev.tags.filter((t) => t[0] === 'p' && isHex64(t[1])).map((t) => ({ pubkey: t[1], role: t[2] }));
  if (targets.length === 0) reject(GROUP_COMMAND_REFUSALS.needsPTag);
  return targets;
}

/** The well-formed `p` keys of a command, each once (their ranks are read before the tags are judged). */
function pKeys(ev: NostrEvent): string[] {
  return [...new Set(ev.tags.filter((t) => t[0] === 'p' && isHex64(t[1])).map((t) => t[1]))];
}
