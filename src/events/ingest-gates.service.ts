/**
 * The ordered gates of the write path (relay.md §5.2), each refusing with its own `OK` reason:
 * first what the event is (kinds never taken here or on this transport, text that cannot be
 * stored exactly, then its id and signature, clock and size limits, a known kind), then the access
 * gates, all read on the writer (steps 8–10 and 12): the author's moderation state, whether the
 * author may post in the event's channel, then the per-kind validators. IngestService runs them in
 * that order.
 */
import { Injectable } from '@nestjs/common';
import { ChannelRepository } from '../channels/channel.repository.js';
import { GROUP_KINDS } from '../channels/group-commands.service.js';
import { NostrEvent } from '../nostr/nostr.types.js';
import { checkEventLimits, checkStorableText } from '../nostr/event-validation.js';
import { isEphemeral, isKnownKind, KIND, MEMBERSHIP_NOTIFICATION_KINDS, RELAY_ONLY_KINDS } from '../nostr/kinds.js';
import { SignatureVerifier } from './signature-verifier.js';
import { DatabaseService } from '@buzz-relay/read-path';
import { ModerationRepository, Restriction } from '../moderation/moderation.repository.js';
import { EventWriteRepository } from './event-write.repository.js';
import { kindShapeError, kindTargetError, kindTargetOf } from './kind-validators.js';
import { reject } from '../nostr/refusal.js';
import { INGEST_REFUSALS } from './ingest.refusals.js';
import { BAN_REFUSALS } from '../moderation/ban.refusals.js';
import { CHANNEL_ACCESS_REFUSALS } from '../channels/channel-access.refusals.js';
import { TargetVisibility } from './target-visibility.service.js';

/**
 * Kinds whose own validators decide channel access (§5.2 step 10). Beyond the spec's list,
 * 9000/9001/9009: their validator demands a channel admin or relay-wide authority, which is
 * stricter than membership and lets the relay owner manage a private channel it is not in.
 */
const SELF_VALIDATING_KINDS = new Set<number>([
  GROUP_KINDS.PUT_USER,
  GROUP_KINDS.REMOVE_USER,
  GROUP_KINDS.CREATE_INVITE,
  GROUP_KINDS.JOIN,
  GROUP_KINDS.CREATE_GROUP,
  40003,
  GROUP_KINDS.EDIT_METADATA,
  GROUP_KINDS.DELETE_EVENT,
  GROUP_KINDS.DELETE_GROUP,
]);

/** Over HTTP these give 400 (relay.md §3.2): presence needs a socket, gift wraps are WS-only upstream. */
const WS_ONLY_KINDS: ReadonlySet<number> = new Set([KIND.GIFT_WRAP, KIND.PRESENCE]);

@Injectable()
export class IngestGates {
  constructor(
    private readonly moderation: ModerationRepository,
    private readonly channels: ChannelRepository,
    private readonly database: DatabaseService,
    private readonly events: EventWriteRepository,
    private readonly targets: TargetVisibility,
    private readonly verifier: SignatureVerifier,
  ) {}

  /** Kinds ingest never takes (or not on this transport), and text that cannot be stored exactly: refused, never acknowledged. */
  beforeSignature(event: NostrEvent, transport: 'ws' | 'http'): void {
    if (event.kind === 22242) reject(INGEST_REFUSALS.authEvent);
    if (MEMBERSHIP_NOTIFICATION_KINDS.has(event.kind)) reject(INGEST_REFUSALS.membershipNotice);
    if (RELAY_ONLY_KINDS.has(event.kind)) reject(INGEST_REFUSALS.relayOnlyKind);
    if (transport === 'http' && WS_ONLY_KINDS.has(event.kind)) reject(INGEST_REFUSALS.webSocketOnlyKind(event.kind));
    const text = checkStorableText(event);
    if (!text.ok) reject(text.reason);
  }

  /** The id and Schnorr signature (worker threads), then the clock and size limits and a known kind. */
  async signature(event: NostrEvent): Promise<void> {
    const verdict = await this.verifier.verify(event);
    if (!verdict.ok) reject(verdict.reason);
    const limits = checkEventLimits(event, Math.floor(Date.now() / 1000));
    if (!limits.ok) reject(limits.reason);
    if (!isEphemeral(event.kind) && !isKnownKind(event.kind)) reject(INGEST_REFUSALS.unknownKind);
  }

  /**
   * Starts the author's restriction lookup for moderationGate to apply later. An event refused
   * before the gate leaves it unawaited: the no-op catch keeps a failed lookup from becoming an
   * unhandled rejection, and the gate, awaiting the lookup itself, still meets the failure.
   */
  restrictionAhead(communityId: string, pubkey: string): Promise<Restriction> {
    const lookup = this.moderation.restrictionOf(communityId, pubkey);
    lookup.catch(() => undefined);
    return lookup;
  }

  /**
   * A ban or timeout of the session's author refuses every write that reaches this gate. The author
   * is the authenticated key, so a gift wrap (signed by a throwaway key) is its sender's write like
   * any other; the wrap's own key is checked as well, so a banned key cannot publish wraps it
   * signed through another session. `ahead`: the lookup restrictionAhead started for `author`;
   * without it the gate reads now.
   */
  async moderationGate(communityId: string, author: string, event: NostrEvent, ahead?: Promise<Restriction>): Promise<void> {
    const lookups = [ahead ?? this.moderation.restrictionOf(communityId, author)];
    if (event.pubkey !== author) lookups.push(this.moderation.restrictionOf(communityId, event.pubkey));
    const found = await Promise.all(lookups);
    if (found.some((r) => r.kind === 'banned')) reject(BAN_REFUSALS.banned);
    const until = Math.max(...found.map((r) => (r.kind === 'timed_out' ? r.untilSecs : 0)));
    if (until > 0) reject(BAN_REFUSALS.timedOut(until));
  }

  /** Open channels take posts from anyone in the community; private ones from members only. */
  async channelGate(communityId: string, event: NostrEvent, channelId: string | null): Promise<void> {
    if (channelId === null || event.kind === GROUP_KINDS.CREATE_GROUP) return;
    const ch = await this.channels.find(communityId, channelId);
    // An archived channel takes nothing but the metadata edit that can unarchive it (§5.2 step 12),
    // edits and the other self-validating kinds included.
    if (ch?.archived && event.kind !== GROUP_KINDS.EDIT_METADATA) reject(INGEST_REFUSALS.channelArchived);
    if (SELF_VALIDATING_KINDS.has(event.kind)) return;
    if (ch?.visibility === 'open') return;
    const role = ch ? await this.channels.memberRole(communityId, channelId, event.pubkey) : undefined;
    if (!role) reject(CHANNEL_ACCESS_REFUSALS.notChannelMember);
  }

  /** §5.2 step 12 (relay.md §1.3): edit ownership, forum vote target, diff envelope, profile JSON. */
  async kindGate(communityId: string, event: NostrEvent, channelId: string | null): Promise<void> {
    const shape = kindShapeError(event);
    if (shape) reject(shape);
    const targetId = kindTargetOf(event);
    if (targetId === undefined) return;
    // The writer: a target stored a moment ago must be found, and an edit right decided on current
    // data. One the author may not read is answered as a missing one.
    const target = await this.database.withWriter('authorization', async (db) => this.targets.seen(db, communityId, event.pubkey, await this.events.findKindTarget(db, communityId, targetId)));
    const refusal = kindTargetError(event, channelId, target);
    if (refusal) reject(refusal);
  }
}
