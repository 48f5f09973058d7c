/**
 * NIP-43 relay membership commands (relay.md §5.2 step 11): 9030 add member, 9031 remove member,
 * 9032 change role, 9033 workspace profile (WorkspaceProfiles), and the member's own leave request
 * 28936. They are executed and never stored; the change, the relay-signed 8000/8001 and the 13534
 * snapshot commit in one transaction (MembershipChanges). The operator CLI calls the same
 * operations with the `operator` actor. Who may do what: docs/moderation.md. Refusal texts follow upstream's (relay-admin.refusals.ts).
 */
import { Inject, Injectable } from '@nestjs/common';
import { NostrEvent } from '../nostr/nostr.types.js';
import type { AppConfig } from '../config/app-config.js';
import { APP_CONFIG } from '../config/config.tokens.js';
import { ModerationRepository } from '../moderation/moderation.repository.js';
import { RelayAuthority } from '../moderation/relay-authority.service.js';
import { RelayMembershipRepository } from '../moderation/relay-membership.repository.js';
import { KIND, RELAY_ADMIN_KINDS } from '../nostr/kinds.js';
import { reject } from '../nostr/refusal.js';
import { BAN_REFUSALS } from '../moderation/ban.refusals.js';
import { RELAY_ADMIN_REFUSALS } from './relay-admin.refusals.js';
import { requireFreshCommand, tagValue, targetPubkey } from './command-input.js';
import { CommandReplayGuard } from './command-replay.guard.js';
import { Actor, actorKey, authorityOf } from './actor.js';
import { MembershipChanges } from './membership-changes.service.js';
import { WorkspaceProfiles, workspaceProfileOf } from './workspace-profiles.service.js';
import type { EventCommand } from '../events/command-registry.js';


export const LEFT_RELAY = 'info: you have left this relay';

@Injectable()
export class RelayAdminCommands implements EventCommand {
  readonly kinds = RELAY_ADMIN_KINDS;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly members: RelayMembershipRepository,
    private readonly authority: RelayAuthority,
    private readonly moderation: ModerationRepository,
    private readonly replay: CommandReplayGuard,
    private readonly changes: MembershipChanges,
    private readonly profiles: WorkspaceProfiles,
  ) {}

  /** Executes a signed command; resolves with the OK message or throws a Rejection. */
  async execute(communityId: string, event: NostrEvent): Promise<string> {
    if (event.kind === KIND.NIP43_LEAVE_REQUEST) return this.leave(communityId, event);
    // A ban is checked here because these kinds skip the ingest moderation gate (a timed-out admin keeps administering).
    if ((await this.moderation.restrictionOf(communityId, event.pubkey, { fresh: true })).kind === 'banned') reject(BAN_REFUSALS.banned);
    requireFreshCommand(event);
    const actor = { pubkey: event.pubkey };
    const claim = () => this.replay.claim(communityId, event.id);
    if (event.kind === KIND.RELAY_ADMIN_SET_WORKSPACE_PROFILE) return this.profiles.set(communityId, actor, workspaceProfileOf(event), claim);
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
    return this.changes.commit(communityId, async (tx) => {
      const who = await authorityOf(this.authority, tx, communityId, actor);
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
    return this.changes.commit(communityId, async (tx) => {
      const who = await authorityOf(this.authority, tx, communityId, actor);
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
    return this.changes.commit(communityId, async (tx) => {
      if ((await authorityOf(this.authority, tx, communityId, actor)) !== 'owner') reject(RELAY_ADMIN_REFUSALS.notOwner);
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

  /** 28936 (NIP-43 leave): only where membership is enforced; the owner cannot leave. */
  private async leave(communityId: string, event: NostrEvent): Promise<string> {
    if (!this.config.requireRelayMembership) reject(RELAY_ADMIN_REFUSALS.membershipNotEnabled);
    const delta = event.created_at - Math.floor(Date.now() / 1000);
    if (Math.abs(delta) > 120) reject(RELAY_ADMIN_REFUSALS.leaveTimestamp(delta));
    if (!event.tags.some((t) => t.length === 1 && t[0] === '-')) reject(RELAY_ADMIN_REFUSALS.leaveUnprotected);
    return this.changes.commit(communityId, async (tx) => {
      const role = await this.members.roleOf(tx, communityId, event.pubkey);
      if (role === undefined) reject(RELAY_ADMIN_REFUSALS.leaveNotMember);
      if (role === 'owner' || this.authority.isConfiguredOwner(event.pubkey)) reject(RELAY_ADMIN_REFUSALS.ownerCannotLeave);
      await this.replay.claim(communityId, event.id);
      await this.members.deleteMember(tx, communityId, event.pubkey, ['admin', 'member']);
      return { message: LEFT_RELAY, changed: true, delta: { kind: KIND.NIP43_MEMBER_REMOVED, pubkey: event.pubkey } };
    });
  }
}
