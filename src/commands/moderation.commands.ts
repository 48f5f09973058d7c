/**
 * Moderation commands 9040–9044 (relay.md §1.3, §5.2 step 7): ban, unban, timeout, lift a timeout,
 * resolve a report. They are executed directly and never stored, and they run before the ingest
 * moderation gate, so a timed-out moderator can still lift a timeout (a banned one cannot act at
 * all). Moderators are the configured owner, operators, and relay owners and admins; a moderator
 * acts only on keys of a lower rank (ranks.ts, docs/moderation.md). Each change and its audit row
 * (`moderation_actions`) commit in one transaction. A ban reaches open sockets through BanNotices
 * (this pod) and the Redis bridge (the others). 9044 closes a queued report (report.commands.ts)
 * as resolved or dismissed, once; it records the decision and enforces nothing itself.
 */
import { Injectable, Logger } from '@nestjs/common';
import { Kysely } from 'kysely';
import { NostrEvent } from '../nostr/nostr.types.js';
import { DB } from '@buzz-relay/read-path';
import { BanNotices } from '../moderation/ban-notices.js';
import { ModerationQueueRepository, NewAction } from '../moderation/moderation-queue.repository.js';
import { ModerationRepository } from '../moderation/moderation.repository.js';
import { outranks, RANK, relayRank } from '../moderation/ranks.js';
import { RelayAuthority } from '../moderation/relay-authority.service.js';
import { RelayMembershipRepository } from '../moderation/relay-membership.repository.js';
import { KIND, MODERATION_KINDS } from '../nostr/kinds.js';
import { reject } from '../nostr/refusal.js';
import { BAN_REFUSALS } from '../moderation/ban.refusals.js';
import { MODERATION_REFUSALS } from './moderation.refusals.js';
import { expirationOf, requireFreshCommand, tagValue, targetPubkey } from './command-input.js';
import { CommandReplayGuard } from './command-replay.guard.js';
import { Actor, actorKey, authorityOf } from './actor.js';
import { lowerHex64 } from '../nostr/hex.js';
import type { EventCommand } from '../events/command-registry.js';


const REASON_MAX = 512;
const RESOLUTION_ACTIONS = ['delete', 'kick', 'ban', 'timeout', 'dismiss', 'escalate'] as const;
type ResolutionAction = (typeof RESOLUTION_ACTIONS)[number];

/** The signed command behind a call: its id (for the audit row) and its one-time replay claim. */
export interface CommandOrigin {
  readonly eventId: string;
  readonly claim: () => Promise<void>;
}

interface Resolution {
  readonly reportEventId: string;
  readonly status: 'resolved' | 'dismissed';
  readonly action: ResolutionAction;
  readonly reason: string | null;
}

@Injectable()
export class ModerationCommands implements EventCommand {
  readonly kinds = MODERATION_KINDS;

  private readonly logger = new Logger('ModerationCommands');

  constructor(
    private readonly moderation: ModerationRepository,
    private readonly members: RelayMembershipRepository,
    private readonly queue: ModerationQueueRepository,
    private readonly authority: RelayAuthority,
    private readonly replay: CommandReplayGuard,
    private readonly notices: BanNotices,
  ) {}

  /** Executes a signed command; resolves with the OK message or throws a Rejection. */
  async execute(communityId: string, event: NostrEvent): Promise<string> {
    if ((await this.moderation.restrictionOf(communityId, event.pubkey, { fresh: true })).kind === 'banned') reject(BAN_REFUSALS.banned);
    requireFreshCommand(event);
    const actor = { pubkey: event.pubkey };
    const origin: CommandOrigin = { eventId: event.id, claim: () => this.replay.claim(communityId, event.id) };
    if (event.kind === KIND.MODERATION_RESOLVE_REPORT) return this.resolveReport(communityId, actor, resolutionOf(event), origin);
    const target = targetPubkey(event);
    const reason = tagValue(event, 'reason')?.slice(0, REASON_MAX) ?? null;
    switch (event.kind) {
      case KIND.MODERATION_BAN:
        return this.ban(communityId, actor, target, reason, expirationOf(event), origin);
      case KIND.MODERATION_UNBAN:
        return this.unban(communityId, actor, target, origin);
      case KIND.MODERATION_TIMEOUT: {
        const until = expirationOf(event);
        if (until === undefined) reject(MODERATION_REFUSALS.timeoutNeedsExpiration);
        return this.timeout(communityId, actor, target, until, reason, origin);
      }
      default:
        return this.untimeout(communityId, actor, target, origin);
    }
  }

  /** 9040: records the ban, then ends the key's open sockets on every pod. */
  async ban(communityId: string, actor: Actor, target: string, reason: string | null, expiresAtSecs: number | undefined, origin?: CommandOrigin): Promise<string> {
    const expiresAt = expiresAtSecs === undefined ? null : new Date(expiresAtSecs * 1000);
    await this.change(communityId, actor, target, origin, async (tx) => {
      await this.members.upsertBan(tx, communityId, target, actorKey(actor), reason, expiresAt);
      return { action: 'ban', reason, expiresAt };
    });
    this.logger.log({ communityId, target }, 'community ban applied');
    await this.notices.announce(communityId, target);
    return '';
  }

  /** 9041 */
  async unban(communityId: string, actor: Actor, target: string, origin?: CommandOrigin): Promise<string> {
    await this.change(communityId, actor, target, origin, async (tx) => {
      if (!(await this.members.liftBan(tx, communityId, target))) reject(MODERATION_REFUSALS.notBanned);
      return { action: 'unban' };
    });
    return '';
  }

  /** 9042: a write block until `untilSecs`; the socket stays open (relay.md §2.9). */
  async timeout(communityId: string, actor: Actor, target: string, untilSecs: number, reason: string | null, origin?: CommandOrigin): Promise<string> {
    await this.change(communityId, actor, target, origin, async (tx) => {
      await this.members.upsertTimeout(tx, communityId, target, untilSecs, actorKey(actor), reason);
      return { action: 'timeout', reason, expiresAt: new Date(untilSecs * 1000) };
    });
    return '';
  }

  /** 9043 */
  async untimeout(communityId: string, actor: Actor, target: string, origin?: CommandOrigin): Promise<string> {
    await this.change(communityId, actor, target, origin, async (tx) => {
      if (!(await this.members.clearTimeout(tx, communityId, target))) reject(MODERATION_REFUSALS.notTimedOut);
      return { action: 'untimeout' };
    });
    return '';
  }

  /** 9044: closes an open report of this community, once, with its audit row. */
  async resolveReport(communityId: string, actor: Actor, r: Resolution, origin?: CommandOrigin): Promise<string> {
    await this.authorise(communityId, actor, undefined);
    await origin?.claim();
    await this.queue.withWriter('event_write', (db) => db.transaction().execute(async (tx) => {
      const report = await this.queue.lockReport(tx, communityId, r.reportEventId);
      if (report === undefined) reject(MODERATION_REFUSALS.reportNotFound);
      if (report.status !== 'open') reject(MODERATION_REFUSALS.reportNotOpen);
      await this.queue.closeReport(tx, report.id, r.status, r.action, actorKey(actor) ?? 'operator');
      await this.queue.recordAction(tx, communityId, {
        actorPubkey: actorKey(actor),
        action: auditActionOf(r.action),
        targetPubkey: report.targetPubkey,
        targetEventId: report.targetEventId,
        reportId: report.id,
        commandEventId: origin?.eventId ?? null,
        reason: r.reason,
      });
    }));
    this.logger.log({ communityId, report: r.reportEventId, status: r.status }, 'report resolved');
    return '';
  }

  /**
   * Authorises, claims the command once, then runs the change and writes its audit row in one
   * writer transaction (a refusal inside rolls both back).
   */
  private async change(communityId: string, actor: Actor, target: string, origin: CommandOrigin | undefined, apply: (tx: Kysely<DB>) => Promise<Omit<NewAction, 'actorPubkey'>>): Promise<void> {
    await this.authorise(communityId, actor, target);
    await origin?.claim();
    await this.members.withWriter('event_write', (db) => db.transaction().execute(async (tx) => {
      const audit = await apply(tx);
      await this.queue.recordAction(tx, communityId, { ...audit, actorPubkey: actorKey(actor), targetPubkey: target, commandEventId: origin?.eventId ?? null });
    }));
  }

  /** The actor must be a moderator and outrank the target (nobody moderates themselves or a peer). */
  private async authorise(communityId: string, actor: Actor, target: string | undefined): Promise<void> {
    const [who, theirs] = await this.members.withWriter('authorization', async (db) => [
      await authorityOf(this.authority, db, communityId, actor),
      target === undefined ? undefined : await authorityOf(this.authority, db, communityId, { pubkey: target }),
    ]);
    if (who !== 'owner' && who !== 'admin') reject(MODERATION_REFUSALS.moderatorRequired);
    if (target === undefined || theirs === undefined) return;
    if (actor !== 'operator' && actor.pubkey === target) reject(MODERATION_REFUSALS.moderateSelf);
    // The CLI acts as an owner, yet never on a configured key.
    const mine = actor === 'operator' && this.authority.isConfigured(target) ? RANK.none : relayRank(who);
    if (!outranks(mine, relayRank(theirs))) reject(MODERATION_REFUSALS.outranked);
  }
}

/** A 9044's tags: `report` (the report's event id), `status`, `action`, optional `reason`. */
function resolutionOf(event: NostrEvent): Resolution {
  const reportEventId = lowerHex64(tagValue(event, 'report'));
  if (reportEventId === undefined) reject(MODERATION_REFUSALS.reportTag);
  const status = tagValue(event, 'status');
  if (status === undefined) reject(MODERATION_REFUSALS.statusMissing);
  const action = tagValue(event, 'action');
  if (action === undefined) reject(MODERATION_REFUSALS.actionMissing);
  if (status !== 'resolved' && status !== 'dismissed') reject(MODERATION_REFUSALS.invalidStatus(status));
  if (!(RESOLUTION_ACTIONS as readonly string[]).includes(action)) reject(MODERATION_REFUSALS.invalidAction(action, RESOLUTION_ACTIONS));
  if ((action === 'dismiss') !== (status === 'dismissed')) reject(MODERATION_REFUSALS.dismissPairing);
  return { reportEventId, status, action: action as ResolutionAction, reason: tagValue(event, 'reason')?.slice(0, REASON_MAX) ?? null };
}

/** The audit row's action for a resolution (upstream's names). */
function auditActionOf(action: ResolutionAction): string {
  if (action === 'dismiss') return 'dismiss_report';
  if (action === 'escalate') return 'escalate';
  return `resolve:${action}`;
}
