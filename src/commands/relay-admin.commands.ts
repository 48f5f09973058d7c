/**
 * NIP-43 relay membership commands (relay.md §5.2 step 11): 9030 add member, 9031 remove member,
 * 9032 change role, 9033 workspace profile, and the member's own leave request 28936. They are
 * executed and never stored; the change, the relay-signed 8000/8001 and the 13534 snapshot commit
 * in one transaction. 9033 changes the community's record only (no event is signed for it). The
 * operator CLI calls the same operations with the `operator` actor. Who may do what:
 * docs/moderation.md. Refusal texts follow upstream's (relay-admin.refusals.ts).
 */
import { Inject, Injectable, Logger } from '@nestjs/common';
import { Kysely } from 'kysely';
import { NostrEvent } from '../nostr/nostr.types.js';
import type { AppConfig } from '../config/app-config.js';
import { APP_CONFIG } from '../config/config.tokens.js';
import { DB } from '@buzz-relay/read-path';
import { AccessRevocations } from '../moderation/access-revocations.js';
import { ModerationRepository } from '../moderation/moderation.repository.js';
import { Authority, RelayAuthority } from '../moderation/relay-authority.service.js';
import { CommunityRepository, WorkspaceProfile } from '../tenancy/community.repository.js';
import { TenancyService } from '../tenancy/tenancy.service.js';
import { RelayMembershipRepository } from '../moderation/relay-membership.repository.js';
import { EventBus } from '../events/event-bus.js';
import { EventWriter } from '../events/event-writer.service.js';
import { KIND } from '../nostr/kinds.js';
import { reject } from '../nostr/refusal.js';
import { BAN_REFUSALS } from '../moderation/ban.refusals.js';
import { RELAY_ADMIN_REFUSALS } from './relay-admin.refusals.js';
import { requireFreshCommand, tagValue, targetPubkey } from './command-input.js';
import { CommandReplayGuard } from './command-replay.guard.js';
import { MembershipDelta, Nip43State } from './nip43-state.service.js';
import type { EventCommand } from '../events/command-registry.js';

/** A command's author: a signed event's pubkey, or the operator CLI (owner authority, no key). */
export type Actor = { readonly pubkey: string } | 'operator';

export const RELAY_ADMIN_KINDS: ReadonlySet<number> = new Set([
  KIND.RELAY_ADMIN_ADD_MEMBER,
  KIND.RELAY_ADMIN_REMOVE_MEMBER,
  KIND.RELAY_ADMIN_CHANGE_ROLE,
  KIND.RELAY_ADMIN_SET_WORKSPACE_PROFILE,
  KIND.NIP43_LEAVE_REQUEST,
]);

export const LEFT_RELAY = 'info: you have left this relay';

interface Change {
  readonly message: string;
  /** The delta to announce; undefined when nothing changed (a re-add) or for a role change. */
  readonly delta?: { kind: MembershipDelta; pubkey: string };
  readonly changed: boolean;
}

@Injectable()
export class RelayAdminCommands implements EventCommand {
  readonly kinds = RELAY_ADMIN_KINDS;
  private readonly logger = new Logger('RelayAdminCommands');

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly writer: EventWriter,
    private readonly members: RelayMembershipRepository,
    private readonly authority: RelayAuthority,
    private readonly moderation: ModerationRepository,
    private readonly state: Nip43State,
    private readonly replay: CommandReplayGuard,
    private readonly bus: EventBus,
    private readonly revocations: AccessRevocations,
    private readonly communities: CommunityRepository,
    private readonly tenancy: TenancyService,
  ) {}

  /** Executes a signed command; resolves with the OK message or throws a Rejection. */
  async execute(communityId: string, event: NostrEvent): Promise<string> {
    if (event.kind === KIND.NIP43_LEAVE_REQUEST) return this.leave(communityId, event);
    // A ban is checked here because these kinds skip the ingest moderation gate (a timed-out admin keeps administering).
    if ((await this.moderation.restrictionOf(communityId, event.pubkey, { fresh: true })).kind === 'banned') reject(BAN_REFUSALS.banned);
    requireFreshCommand(event);
    const actor = { pubkey: event.pubkey };
    const claim = () => this.replay.claim(communityId, event.id);
    if (event.kind === KIND.RELAY_ADMIN_SET_WORKSPACE_PROFILE) return this.setWorkspaceProfile(communityId, actor, workspaceProfileOf(event), claim);
    const target = targetPubkey(event);
    switch (event.kind) {
      case KIND.RELAY_ADMIN_ADD_MEMBER:
        return this.addMember(communityId, actor, target, tagValue(event, 'role') ?? 'member', claim);
      case KIND.RELAY_ADMIN_REMOVE_MEMBER:
        return this.removeMember(communityId, actor, target, claim);
      default:
        return this.changeRole(communityId, actor, target, tagValue(event, 'role'), claim);
    }
  }

  /** 9030: admins and owners add members; only owners add admins; nobody adds an owner. */
  addMember(communityId: string, actor: Actor, target: string, role: string, claim?: () => Promise<void>): Promise<string> {
    return this.run(communityId, async (tx) => {
      const who = await this.authorityOf(tx, communityId, actor);
      if (who !== 'owner' && who !== 'admin') reject(RELAY_ADMIN_REFUSALS.notAdmin);
      if (role === 'owner') reject(RELAY_ADMIN_REFUSALS.addOwner);
      if (role !== 'admin' && role !== 'member') reject(RELAY_ADMIN_REFUSALS.invalidRole(role));
      if (role === 'admin' && who !== 'owner') reject(RELAY_ADMIN_REFUSALS.onlyOwnerGrantsAdmin);
      await claim?.();
      const added = await this.members.insertMember(tx, communityId, target, role, actorKey(actor));
      return added ? { message: '', changed: true, delta: { kind: KIND.NIP43_MEMBER_ADDED, pubkey: target } } : { message: '', changed: false };
    });
  }

  /** 9031: owners remove admins and members, admins remove members; nobody removes an owner or themselves. */
  removeMember(communityId: string, actor: Actor, target: string, claim?: () => Promise<void>): Promise<string> {
    return this.run(communityId, async (tx) => {
      const who = await this.authorityOf(tx, communityId, actor);
      if (who !== 'owner' && who !== 'admin') reject(RELAY_ADMIN_REFUSALS.notAdmin);
      if (actor !== 'operator' && actor.pubkey === target) reject(RELAY_ADMIN_REFUSALS.removeSelf);
      if (this.authority.isConfigured(target)) reject(RELAY_ADMIN_REFUSALS.removeOwner);
      await claim?.();
      const removed = await this.members.deleteMember(tx, communityId, target, who === 'owner' ? ['admin', 'member'] : ['member']);
      if (removed === undefined) {
        const role = await this.members.roleOf(tx, communityId, target);
        if (role === undefined) reject(RELAY_ADMIN_REFUSALS.memberNotFound(target));
        if (role === 'owner') reject(RELAY_ADMIN_REFUSALS.removeOwner);
        reject(RELAY_ADMIN_REFUSALS.adminsRemoveMembers);
      }
      return { message: '', changed: true, delta: { kind: KIND.NIP43_MEMBER_REMOVED, pubkey: target } };
    });
  }

  /** 9032: owners only, between admin and member; the owner role is never granted or taken this way. */
  changeRole(communityId: string, actor: Actor, target: string, role: string | undefined, claim?: () => Promise<void>): Promise<string> {
    return this.run(communityId, async (tx) => {
      if ((await this.authorityOf(tx, communityId, actor)) !== 'owner') reject(RELAY_ADMIN_REFUSALS.notOwner);
      if (actor !== 'operator' && actor.pubkey === target) reject(RELAY_ADMIN_REFUSALS.changeOwnRole);
      if (role === undefined) reject(RELAY_ADMIN_REFUSALS.roleMissing);
      if (role === 'owner') reject(RELAY_ADMIN_REFUSALS.setOwner);
      if (role !== 'admin' && role !== 'member') reject(RELAY_ADMIN_REFUSALS.invalidRole(role));
      if (this.authority.isConfigured(target)) reject(RELAY_ADMIN_REFUSALS.changeOwnerRole);
      await claim?.();
      if (!(await this.members.setRole(tx, communityId, target, role))) {
        const exists = (await this.members.roleOf(tx, communityId, target)) !== undefined;
        reject(exists ? RELAY_ADMIN_REFUSALS.changeOwnerRole : RELAY_ADMIN_REFUSALS.memberNotFound(target));
      }
      return { message: '', changed: true };
    });
  }

  /**
   * 9033: owners and admins set the workspace icon and the community's thread display
   * (`thread_replies_in_channel`, NIP-CW). Other pods' NIP-11 shows a new icon within their
   * 10 s host cache; this pod's at once.
   */
  async setWorkspaceProfile(communityId: string, actor: Actor, profile: WorkspaceProfile, claim?: () => Promise<void>): Promise<string> {
    await this.writer.transaction(false, async (tx) => {
      const who = await this.authorityOf(tx, communityId, actor);
      if (who !== 'owner' && who !== 'admin') reject(RELAY_ADMIN_REFUSALS.notAdmin);
      await claim?.();
      await this.communities.setProfile(tx, communityId, profile);
    });
    this.tenancy.forget(communityId);
    this.logger.log({ communityId, icon: profile.icon === undefined ? 'kept' : profile.icon === null ? 'cleared' : 'set', threadRepliesInChannel: profile.threadRepliesInChannel }, 'workspace profile updated');
    return '';
  }

  /** 28936 (NIP-43 leave): only where membership is enforced; the owner cannot leave. */
  private async leave(communityId: string, event: NostrEvent): Promise<string> {
    if (!this.config.requireRelayMembership) reject(RELAY_ADMIN_REFUSALS.membershipNotEnabled);
    const delta = event.created_at - Math.floor(Date.now() / 1000);
    if (Math.abs(delta) > 120) reject(RELAY_ADMIN_REFUSALS.leaveTimestamp(delta));
    if (!event.tags.some((t) => t.length === 1 && t[0] === '-')) reject(RELAY_ADMIN_REFUSALS.leaveUnprotected);
    return this.run(communityId, async (tx) => {
      const role = await this.members.roleOf(tx, communityId, event.pubkey);
      if (role === undefined) reject(RELAY_ADMIN_REFUSALS.leaveNotMember);
      if (role === 'owner' || this.authority.isConfiguredOwner(event.pubkey)) reject(RELAY_ADMIN_REFUSALS.ownerCannotLeave);
      await this.replay.claim(communityId, event.id);
      await this.members.deleteMember(tx, communityId, event.pubkey, ['admin', 'member']);
      return { message: LEFT_RELAY, changed: true, delta: { kind: KIND.NIP43_MEMBER_REMOVED, pubkey: event.pubkey } };
    });
  }

  private async authorityOf(tx: Kysely<DB>, communityId: string, actor: Actor): Promise<Authority> {
    return actor === 'operator' ? 'owner' : (await this.authority.of(tx, communityId, actor.pubkey)).authority;
  }

  /**
   * One transaction: the change and, when something changed, its NIP-43 events. After commit the
   * events go to live subscribers, and a removal is announced so that pods enforcing membership
   * revoke the removed key's open sockets.
   */
  private async run(communityId: string, change: (tx: Kysely<DB>) => Promise<Change>): Promise<string> {
    let published: NostrEvent[] = [];
    const result = await this.writer.transaction(false, async (tx) => {
      const c = await change(tx);
      if (c.changed) published = await this.state.record(tx, communityId, c.delta);
      return c;
    }, 'publish_nip43_membership_locked');
    for (const event of published) this.bus.publish({ communityId, event, channelId: null });
    // Announced whatever this process's setting: the pods that enforce membership act on it (the CLI has no sockets).
    if (result.delta?.kind === KIND.NIP43_MEMBER_REMOVED) {
      this.logger.log({ communityId, pubkey: result.delta.pubkey }, 'relay member removed');
      const revocation = { communityId, pubkey: result.delta.pubkey, reason: 'not_relay_member' as const };
      // After the OK of the command that caused it has been queued (the leaver's own socket closes too).
      setImmediate(() => this.revocations.announce(revocation));
    }
    return result.message;
  }
}

const ICON_URL_MAX = 2048;
const ICON_DATA_URL_MAX = 98_304;
const TRUE_WORDS = new Set(['true', '1', 'yes', 'on']);
const FALSE_WORDS = new Set(['false', '0', 'no', 'off']);

/**
 * A 9033's tags: `["icon", <http(s) URL | data:image/* URL | "" to clear>]` and
 * `["thread_replies_in_channel", true|false]`. A 9033 with neither clears the icon (upstream's
 * first form of the command carried the icon only).
 */
export function workspaceProfileOf(event: NostrEvent): WorkspaceProfile {
  const icon = tagValue(event, 'icon');
  const thread = tagValue(event, 'thread_replies_in_channel');
  let threadRepliesInChannel: boolean | undefined;
  if (thread !== undefined) {
    const word = thread.trim().toLowerCase();
    if (TRUE_WORDS.has(word)) threadRepliesInChannel = true;
    else if (FALSE_WORDS.has(word)) threadRepliesInChannel = false;
    else reject(RELAY_ADMIN_REFUSALS.threadRepliesWord);
  }
  if (icon === undefined) return threadRepliesInChannel === undefined ? { icon: null } : { threadRepliesInChannel };
  if (icon !== '') checkIcon(icon);
  return { icon: icon === '' ? null : icon, threadRepliesInChannel };
}

function checkIcon(icon: string): void {
  if (/[\s\p{Cc}]/u.test(icon)) reject(RELAY_ADMIN_REFUSALS.iconCharacters);
  const bytes = Buffer.byteLength(icon);
  if (icon.startsWith('data:image/')) {
    if (bytes > ICON_DATA_URL_MAX) reject(RELAY_ADMIN_REFUSALS.iconDataUrlTooLong(bytes, ICON_DATA_URL_MAX));
    return;
  }
  if (!icon.startsWith('https://') && !icon.startsWith('http://')) reject(RELAY_ADMIN_REFUSALS.iconScheme);
  if (bytes > ICON_URL_MAX) reject(RELAY_ADMIN_REFUSALS.iconUrlTooLong(bytes, ICON_URL_MAX));
}

function actorKey(actor: Actor): string | null {
  return actor === 'operator' ? null : actor.pubkey;
}

