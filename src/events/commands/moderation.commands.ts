/**
 * Moderation commands 9040–9043 (relay.md §1.3, §5.2 step 7): ban, unban, timeout, untimeout. They
 * are executed directly and never stored, and they run before the ingest moderation gate, so a
 * timed-out moderator can still lift a timeout (a banned one cannot act at all). Moderators are the
 * configured owner, operators, and relay owners and admins; a moderator acts only on keys of a
 * lower rank (docs/moderation.md). 9044 (resolve report) needs the report queue, which this relay
 * does not keep: it is refused after authorisation. A ban reaches open sockets through BanNotices
 * (this pod) and the Redis bridge (the others).
 */
import { Injectable, Logger } from '@nestjs/common';
import { NostrEvent } from '../../common/nostr.types.js';
import { BanNotices } from '../../moderation/ban-notices.js';
import { ModerationRepository } from '../../moderation/moderation.repository.js';
import { Authority, outranks, RelayAuthority } from '../../moderation/relay-authority.service.js';
import { RelayMembershipRepository } from '../../moderation/relay-membership.repository.js';
import { KIND } from '../kinds.js';
import { reject } from '../rejection.js';
import { expirationOf, requireFreshCommand, tagValue, targetPubkey } from './command-input.js';
import { CommandReplayGuard } from './command-replay.guard.js';
import type { Actor } from './relay-admin.commands.js';

export const MODERATION_KINDS: ReadonlySet<number> = new Set([
  KIND.MODERATION_BAN,
  KIND.MODERATION_UNBAN,
  KIND.MODERATION_TIMEOUT,
  KIND.MODERATION_UNTIMEOUT,
  KIND.MODERATION_RESOLVE_REPORT,
]);

export const MODERATOR_REQUIRED = 'restricted: moderator access required';
const REASON_MAX = 512;

@Injectable()
export class ModerationCommands {
  private readonly logger = new Logger('ModerationCommands');

  constructor(
    private readonly moderation: ModerationRepository,
    private readonly members: RelayMembershipRepository,
    private readonly authority: RelayAuthority,
    private readonly replay: CommandReplayGuard,
    private readonly notices: BanNotices,
  ) {}

  /** Executes a signed command; resolves with the OK message or throws a Rejection. */
  async execute(communityId: string, event: NostrEvent): Promise<string> {
    if ((await this.moderation.restrictionOf(communityId, event.pubkey, { fresh: true })).kind === 'banned') reject('blocked: you are banned from this community');
    requireFreshCommand(event);
    const actor = { pubkey: event.pubkey };
    if (event.kind === KIND.MODERATION_RESOLVE_REPORT) {
      await this.authorise(communityId, actor, undefined);
      return reject('invalid: report resolution (kind 9044) is not supported by this relay');
    }
    const target = targetPubkey(event);
    const reason = tagValue(event, 'reason')?.slice(0, REASON_MAX) ?? null;
    const claim = () => this.replay.claim(communityId, event.id);
    switch (event.kind) {
      case KIND.MODERATION_BAN:
        return this.ban(communityId, actor, target, reason, expirationOf(event), claim);
      case KIND.MODERATION_UNBAN:
        return this.unban(communityId, actor, target, claim);
      case KIND.MODERATION_TIMEOUT: {
        const until = expirationOf(event);
        if (until === undefined) reject('invalid: timeout requires an expiration tag');
        return this.timeout(communityId, actor, target, until, reason, claim);
      }
      default:
        return this.untimeout(communityId, actor, target, claim);
    }
  }

  /** 9040: records the ban, then ends the key's open sockets on every pod. */
  async ban(communityId: string, actor: Actor, target: string, reason: string | null, expiresAtSecs: number | undefined, claim?: () => Promise<void>): Promise<string> {
    await this.authorise(communityId, actor, target);
    await claim?.();
    await this.moderation.ban(communityId, target, actorKey(actor), reason, expiresAtSecs === undefined ? null : new Date(expiresAtSecs * 1000));
    this.logger.log({ communityId, target }, 'community ban applied');
    await this.notices.announce(communityId, target);
    return '';
  }

  /** 9041 */
  async unban(communityId: string, actor: Actor, target: string, claim?: () => Promise<void>): Promise<string> {
    await this.authorise(communityId, actor, target);
    await claim?.();
    if (!(await this.members.onWriter('event_write', (db) => this.members.liftBan(db, communityId, target)))) reject('invalid: member is not banned');
    return '';
  }

  /** 9042: a write block until `untilSecs`; the socket stays open (relay.md §2.9). */
  async timeout(communityId: string, actor: Actor, target: string, untilSecs: number, reason: string | null, claim?: () => Promise<void>): Promise<string> {
    await this.authorise(communityId, actor, target);
    await claim?.();
    await this.members.onWriter('event_write', (db) => this.members.upsertTimeout(db, communityId, target, untilSecs, actorKey(actor), reason));
    return '';
  }

  /** 9043 */
  async untimeout(communityId: string, actor: Actor, target: string, claim?: () => Promise<void>): Promise<string> {
    await this.authorise(communityId, actor, target);
    await claim?.();
    if (!(await this.members.onWriter('event_write', (db) => this.members.clearTimeout(db, communityId, target)))) reject('invalid: member is not timed out');
    return '';
  }

  /** The actor must be a moderator and outrank the target (nobody moderates themselves or a peer). */
  private async authorise(communityId: string, actor: Actor, target: string | undefined): Promise<void> {
    const authorityOf = (pubkey: string) => this.members.onWriter('authorization', (db) => this.authority.of(db, communityId, pubkey));
    const who: Authority = actor === 'operator' ? 'owner' : (await authorityOf(actor.pubkey)).authority;
    if (who !== 'owner' && who !== 'admin') reject(MODERATOR_REQUIRED);
    if (target === undefined) return;
    if (actor !== 'operator' && actor.pubkey === target) reject('invalid: cannot moderate yourself');
    const theirs = (await authorityOf(target)).authority;
    if (!outranks(who, theirs) || (actor === 'operator' && this.authority.isConfigured(target))) reject('restricted: cannot moderate a relay owner, operator or admin of equal or higher rank');
  }
}

function actorKey(actor: Actor): string | null {
  return actor === 'operator' ? null : actor.pubkey;
}
