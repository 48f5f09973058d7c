/**
 * The write path shared by WebSocket EVENT and HTTP: ordered gates that each map
 * to an `OK` reason, then storage, then live fan-out of what was newly stored.
 */
import { isNamedGroupId } from '../nostr/group-id.js';
import { Injectable } from '@nestjs/common';
import { Kysely } from 'kysely';
import { isHex64 } from '../nostr/hex.js';
import { NostrEvent } from '../nostr/nostr.types.js';
import { DatabaseService, DB } from '@buzz-relay/read-path';
import { RelayMetrics } from '../metrics/relay-metrics.service.js';
import { deriveChannel, lastHexTag, mentionsOf, threadRefsOf } from './event-derivation.js';
import { deletionTarget } from '../nostr/deletion-target.js';
import { EventBus } from './event-bus.js';
import { checkEventLimits, checkStorableText, parseEvent } from '../nostr/event-validation.js';
import { EventWriteRepository } from './event-write.repository.js';
import { EventWriter } from './event-writer.service.js';
import { isAddressable, isEphemeral, isKnownKind, isReplaceable, KIND, kindMetricLabel, MEMBERSHIP_NOTIFICATION_KINDS, RELAY_ONLY_KINDS } from '../nostr/kinds.js';
import { SignatureVerifier } from './signature-verifier.js';
import { StoredEventInput, ThreadAnchor, ThreadPlacement } from './stored-event.js';
import { threadSummaryOverlay } from '../threads/thread-overlays.js';
import { threadSummaries } from '../threads/thread-summaries.js';
import { ChannelAccessService } from '../channels/channel-access.service.js';
import { GroupCommandService, GroupEffect } from '../channels/group-commands.service.js';
import { GroupStateService } from '../channels/group-state.service.js';
import { PresenceService } from '../redis/presence.service.js';
import { RelaySigner } from '../common/relay-signer.js';
import { IngestGates } from './ingest-gates.service.js';
import { rejectionLabel } from './rejection.js';
import { INGEST_REFUSALS, TARGET_NOT_FOUND } from './ingest.refusals.js';
import { reject, Refusal, Rejection } from '../nostr/refusal.js';
import { TargetVisibility } from './target-visibility.service.js';
import { CommandRegistry } from './command-registry.js';

/**
 * What ingest answers, as the `OK` of NIP-01: `message` is its reason text ('' when stored,
 * `duplicate:` when already stored); a refused event carries its refusal too, whose `wire` is the
 * message, for the transport to map (HTTP status, metric label) without reading the text.
 */
export type IngestResult =
  | { readonly accepted: true; readonly message: string; readonly eventId: string | undefined }
  | { readonly accepted: false; readonly message: string; readonly eventId: string | undefined; readonly refusal: Refusal };

export interface IngestContext {
  readonly communityId: string;
  readonly transport: 'ws' | 'http';
  /**
   * The session's authenticated key (NIP-42 or NIP-98): the writer the moderation gate holds
   * responsible. An event's pubkey equals it, except a gift wrap's, signed by a throwaway key
   * (relay.md §5.2 step 5).
   */
  readonly author: string;
}

const THREAD_KINDS = new Set([9, 1111, 40002, 45001, 45003]);
/** Over HTTP these give 400 (relay.md §3.2): presence needs a socket, gift wraps are WS-only upstream. */
const WS_ONLY_KINDS: ReadonlySet<number> = new Set([KIND.GIFT_WRAP, KIND.PRESENCE]);
/** `e` tags a reaction may carry besides its target: the target's thread context, which clients copy (NIP-25). */
const MAX_REACTION_CONTEXT_REFS = 16;


@Injectable()
export class IngestService {
  constructor(
    private readonly database: DatabaseService,
    private readonly verifier: SignatureVerifier,
    private readonly writer: EventWriter,
    private readonly repo: EventWriteRepository,
    private readonly bus: EventBus,
    private readonly metrics: RelayMetrics,
    private readonly gates: IngestGates,
    private readonly groups: GroupCommandService,
    private readonly access: ChannelAccessService,
    private readonly groupState: GroupStateService,
    private readonly presence: PresenceService,
    private readonly signer: RelaySigner,
    private readonly commands: CommandRegistry,
    private readonly targets: TargetVisibility,
  ) {}

  async ingest(raw: unknown, ctx: IngestContext): Promise<IngestResult> {
    const parsed = parseEvent(raw);
    if (!parsed.ok) return this.rejected(ctx, idOf(raw), parsed.reason);
    const event = parsed.event;
    try {
      const result = await this.accept(event, ctx);
      this.metrics.eventsReceived.inc({ kind: kindMetricLabel(event.kind) });
      return result;
    } catch (err) {
      if (err instanceof Rejection) return this.rejected(ctx, event.id, err.refusal);
      throw err;
    }
  }

  private async accept(event: NostrEvent, ctx: IngestContext): Promise<IngestResult> {
    this.earlyKindGate(event, ctx.transport);
    // Before the signature check: what cannot be stored exactly is refused, never acknowledged.
    const text = checkStorableText(event);
    if (!text.ok) reject(text.reason);
    // The session author's ban/timeout lookup (a writer round trip) runs while the workers check
    // the signature, two hops in parallel instead of one after the other. moderationGate applies
    // its answer in its usual place, so every refusal before the gate still answers first. The key
    // is the authenticated one, never one a client names, so an unsigned event cannot make the
    // relay read any key it likes (a gift wrap's own key is looked up at the gate). Not for a
    // command: executed before the moderation gate, it checks a ban itself (`fresh`).
    const command = this.commands.commandFor(event.kind);
    const restriction = command === undefined ? this.gates.restrictionAhead(ctx.communityId, ctx.author) : undefined;
    const verdict = await this.verifier.verify(event);
    if (!verdict.ok) reject(verdict.reason);
    const limits = checkEventLimits(event, Math.floor(Date.now() / 1000));
    if (!limits.ok) reject(limits.reason);
    if (!isEphemeral(event.kind) && !isKnownKind(event.kind)) reject(INGEST_REFUSALS.unknownKind);
    // Executed, never stored, and before the moderation gate (§5.2 steps 7 and 11): a timed-out
    // moderator can still lift a timeout; the commands check a ban themselves. Reports (1984) go
    // to the moderator queue only.
    if (command !== undefined) return this.executed(event, await command.execute(ctx.communityId, event));
    await this.gates.moderationGate(ctx.communityId, ctx.author, event, restriction);
    const channel = await this.channelOf(event, ctx.communityId);
    await this.gates.channelGate(ctx.communityId, event, channel.channelId);
    await this.gates.kindGate(ctx.communityId, event, channel.channelId);
    if (isEphemeral(event.kind)) {
      // Ephemeral events are never stored: presence is recorded (Redis or in process), then fan-out only.
      if (event.kind === KIND.PRESENCE) await this.presence.apply(ctx.communityId, event);
      this.bus.publish({ communityId: ctx.communityId, event, channelId: channel.channelId });
      return { accepted: true, message: '', eventId: event.id };
    }
    const item: StoredEventInput = {
      event,
      channelId: channel.channelId,
      dTag: isAddressable(event.kind) ? (event.tags.find((t) => t[0] === 'd')?.[1] ?? '') : null,
      thread: await this.placeInThread(event, ctx.communityId, channel.channelId),
      mentions: mentionsOf(event),
    };
    const outcome = await this.store(ctx.communityId, item);
    if (outcome === 'duplicate') return { accepted: true, message: INGEST_REFUSALS.alreadyStored.wire, eventId: event.id };
    this.metrics.eventsStored.inc();
    this.bus.publish({ communityId: ctx.communityId, event, channelId: item.channelId });
    // §5.2 step 14: a new reply's root gets a live 39005 summary (fan-out only, never stored).
    if (item.thread?.root && item.channelId) await this.publishThreadSummaries(ctx.communityId, [{ root: item.thread.root, channelId: item.channelId }]);
    return { accepted: true, message: '', eventId: event.id };
  }

  private executed(event: NostrEvent, message: string): IngestResult {
    return { accepted: true, message, eventId: event.id };
  }

  private earlyKindGate(event: NostrEvent, transport: IngestContext['transport']): void {
    if (event.kind === 22242) reject(INGEST_REFUSALS.authEvent);
    if (MEMBERSHIP_NOTIFICATION_KINDS.has(event.kind)) reject(INGEST_REFUSALS.membershipNotice);
    if (RELAY_ONLY_KINDS.has(event.kind)) reject(INGEST_REFUSALS.relayOnlyKind);
    if (transport === 'http' && WS_ONLY_KINDS.has(event.kind)) reject(INGEST_REFUSALS.webSocketOnlyKind(event.kind));
  }

  /**
   * A reaction or deletion takes its target's channel. A target its author may not read counts as
   * missing (TargetVisibility): a reaction is refused as for a missing target, a deletion is a
   * channel-less NIP-09 request that deletes nothing, both answered as for an id stored nowhere.
   */
  private async channelOf(event: NostrEvent, communityId: string): Promise<{ channelId: string | null }> {
    const derived = deriveChannel(event);
    if (!derived.ok) return reject(derived.reason);
    const { fromTarget, fromCoordinate } = derived;
    if (fromTarget) {
      const target = await this.onWriter(async (db) => this.targets.seen(db, communityId, event.pubkey, await this.repo.findTarget(db, communityId, fromTarget)));
      if (target === undefined && event.kind === 7) reject(TARGET_NOT_FOUND.reaction);
      // A comment on an event that is not here, or not readable by its author, is refused alike:
      // stored as global it would name a private message's id to everyone.
      if (target === undefined && event.kind === KIND.COMMENT) reject(TARGET_NOT_FOUND.comment);
      if (target !== undefined && event.kind === 7) await this.reactionRefsInChannel(event, communityId, fromTarget, target.channelId);
      return { channelId: target?.channelId ?? null };
    }
    if (fromCoordinate) {
      const target = await this.onWriter(async (db) => {
        const channelId = await this.repo.findCoordinateChannel(db, communityId, fromCoordinate);
        return this.targets.seen(db, communityId, event.pubkey, channelId === undefined ? undefined : { pubkey: fromCoordinate.pubkey, channelId });
      });
      return { channelId: target?.channelId ?? null };
    }
    return derived;
  }

  /**
   * A reaction is about one event, its last `e` (NIP-25); the other `e` tags clients copy from
   * the target (its thread's root, its parent) are context, and show the reaction under those
   * events too (`#e`, thread aux). So each one that names a stored event must name one in the
   * target's channel: an `e` into another channel (a private message, under an open one's
   * reaction) is refused with the answer for a missing target, whatever that channel is.
   */
  private async reactionRefsInChannel(event: NostrEvent, communityId: string, target: string, channelId: string | null): Promise<void> {
    const others = [...new Set(event.tags.filter((t) => t[0] === 'e' && isHex64(t[1]) && t[1] !== target).map((t) => t[1]))];
    if (others.length === 0) return;
    if (others.length > MAX_REACTION_CONTEXT_REFS) reject(INGEST_REFUSALS.reactionContextRefs(MAX_REACTION_CONTEXT_REFS));
    const elsewhere = await this.onWriter(async (db) => {
      for (const id of others) {
        const ref = await this.repo.findTarget(db, communityId, id);
        if (ref !== undefined && ref.channelId !== channelId) return true;
      }
      return false;
    });
    if (elsewhere) reject(TARGET_NOT_FOUND.reaction);
  }

  private async placeInThread(event: NostrEvent, communityId: string, channelId: string | null): Promise<ThreadPlacement | null> {
    if (!channelId || !THREAD_KINDS.has(event.kind)) return null;
    const refs = threadRefsOf(event);
    if (!refs) return { parent: null, root: null, depth: 0 };
    const parent = await this.onWriter((db) => this.repo.findThreadParent(db, communityId, refs.parent));
    if (!parent) return reject(TARGET_NOT_FOUND.threadParent);
    if (parent.channel_id !== channelId) {
      // The reply's own channel passed the channel gate; a parent elsewhere is named only if readable.
      const seen = await this.onWriter((db) => this.targets.seen(db, communityId, event.pubkey, { pubkey: parent.pubkey, channelId: parent.channel_id }));
      reject(seen ? INGEST_REFUSALS.threadParentElsewhere : TARGET_NOT_FOUND.threadParent);
    }
    const parentAnchor = { id: parent.event_id.toString('hex'), createdAt: Number(parent.event_created_at) };
    const root = parent.root_event_id
      ? { id: parent.root_event_id.toString('hex'), createdAt: Number(parent.root_event_created_at) }
      : parentAnchor;
    return { parent: parentAnchor, root, depth: parent.depth + 1 };
  }

  private async store(communityId: string, item: StoredEventInput): Promise<'stored' | 'duplicate'> {
    const { event } = item;
    if (item.channelId && this.groups.isGroupCommand(event.kind)) return this.storeGroupCommand(communityId, item, item.channelId);
    if (event.kind === 7) return this.storeReaction(communityId, item);
    if (event.kind === 5) return this.storeDeletion(communityId, item);
    if (isReplaceable(event.kind) || isAddressable(event.kind)) return this.storeReplaceable(communityId, item);
    return this.writer.write(communityId, item);
  }

  /** A NIP-29 command and its state change commit together. */
  private async storeGroupCommand(communityId: string, item: StoredEventInput, channelId: string): Promise<'stored' | 'duplicate'> {
    let effect: GroupEffect | undefined;
    let state: NostrEvent[] = [];
    let notices: NostrEvent[] = [];
    let roots: Array<{ root: ThreadAnchor; channelId: string }> = [];
    const outcome = await this.writer.transaction(true, async (tx) => {
      const inserted = await this.writer.insertIn(tx, communityId, [item]);
      if (!inserted.has(item.event.id)) return 'duplicate' as const;
      effect = await this.groups.apply(tx, communityId, item.event, channelId);
      // Relay-signed NIP-29 state (39000–39003) replaces its previous versions in this transaction.
      state = await this.groupState.refresh(tx, communityId, item.event.kind, channelId);
      await this.writer.insertIn(tx, communityId, state.map((event) => ({ event, channelId, dTag: event.tags.find((t) => t[0] === 'd')![1], thread: null, mentions: [] })));
      // 44100/44101 for a private channel's adds and removals, stored globally and #p-gated, naming
      // the group as the command did.
      const h = item.event.tags.find((t) => t[0] === 'h')?.[1];
      const groupId = h !== undefined && isNamedGroupId(h) ? h : channelId;
      notices = this.groupState.membershipNotices(groupId, effect.added, effect.removed);
      await this.writer.insertIn(tx, communityId, notices.map((event) => ({ event, channelId: null, dTag: null, thread: null, mentions: mentionsOf(event) })));
      roots = await this.repo.unthread(tx, communityId, effect.deletedIds);
      return 'stored' as const;
    });
    if (effect?.accessChanged === 'everyone') this.access.invalidate(communityId);
    else for (const pk of effect?.accessChanged ?? []) this.access.invalidate(communityId, pk);
    for (const event of state) this.bus.publish({ communityId, event, channelId });
    for (const event of notices) this.bus.publish({ communityId, event, channelId: null });
    await this.publishThreadSummaries(communityId, roots);
    return outcome;
  }

  /** One active reaction per (actor, target, emoji); the row and the kind-7 event commit together. */
  private storeReaction(communityId: string, item: StoredEventInput): Promise<'stored' | 'duplicate'> {
    const { event } = item;
    const target = lastHexTag(event, 'e')!;
    const emoji = event.content === '' ? '+' : event.content;
    if ([...emoji].length > 64) reject(INGEST_REFUSALS.reactionEmojiTooLong);
    return this.writer.transaction(item.channelId !== null, async (tx) => {
      const inserted = await this.writer.insertIn(tx, communityId, [item]);
      if (!inserted.has(event.id)) return 'duplicate';
      const fresh = await this.repo.insertReaction(tx, communityId, target, event.pubkey, emoji, event.id);
      if (!fresh) reject(INGEST_REFUSALS.reactionExists);
      return 'stored';
    });
  }

  /** Stale-write protection: an older created_at (or a higher id at the same second) loses. */
  private storeReplaceable(communityId: string, item: StoredEventInput): Promise<'stored' | 'duplicate'> {
    const { event, dTag } = item;
    return this.writer.transaction(item.channelId !== null, async (tx) => {
      await this.repo.lockCoordinate(tx, communityId, event.pubkey, event.kind, dTag);
      const current = await this.repo.findCurrentVersion(tx, communityId, event.pubkey, event.kind, dTag);
      if (current && current.id.toString('hex') === event.id) return 'duplicate';
      if (current && newerOrEqual(current, event)) reject(INGEST_REFUSALS.newerVersionStored);
      const inserted = await this.writer.insertIn(tx, communityId, [item]);
      if (!inserted.has(event.id)) return 'duplicate';
      await this.repo.supersedeVersions(tx, communityId, event.pubkey, event.kind, dTag, event.id);
      return 'stored';
    }, replacementOperation(dTag));
  }

  /**
   * NIP-09 with exactly one target (relay.md §1.3): stores the deletion and soft-deletes the
   * author's own target; a deleted reply lowers its thread's counts in the same transaction.
   */
  private async storeDeletion(communityId: string, item: StoredEventInput): Promise<'stored' | 'duplicate'> {
    const { event } = item;
    const target = deletionTarget(event);
    if (!target.ok) return reject(target.reason);
    let roots: Array<{ root: ThreadAnchor; channelId: string }> = [];
    const outcome = await this.writer.transaction(item.channelId !== null, async (tx) => {
      const inserted = await this.writer.insertIn(tx, communityId, [item]);
      if (!inserted.has(event.id)) return 'duplicate' as const;
      if (target.id) roots = await this.repo.unthread(tx, communityId, await this.repo.softDeleteByIds(tx, communityId, event.pubkey, [target.id]));
      const c = target.coordinate;
      if (c && c.pubkey === event.pubkey) await this.repo.softDeleteCoordinate(tx, communityId, c.pubkey, c.kind, c.d, event.created_at);
      return 'stored' as const;
    });
    await this.publishThreadSummaries(communityId, roots);
    return outcome;
  }

  /**
   * Live relay-signed 39005 summaries of thread roots whose counts just changed (relay.md §5.2
   * step 14): fan-out only, never stored. Read on the writer after the commit. Best effort: the
   * write is already durable, so a failed read costs the overlay, never the `OK`.
   */
  private async publishThreadSummaries(communityId: string, roots: ReadonlyArray<{ root: ThreadAnchor; channelId: string }>): Promise<void> {
    for (const { root, channelId } of roots) {
      try {
        const [summary] = await this.onWriter((db) => threadSummaries(db, communityId, [root], { repliedOnly: false }));
        if (summary) this.bus.publish({ communityId, event: threadSummaryOverlay(this.signer, summary, channelId), channelId });
      } catch {
        // The overlay is advisory; the bridge recomputes it on the next read.
      }
    }
  }

  private rejected(ctx: IngestContext, eventId: string | undefined, refusal: Refusal): IngestResult {
    this.metrics.eventsRejected.inc({ transport: ctx.transport, reason: rejectionLabel(refusal.code) });
    return { accepted: false, message: refusal.wire, eventId, refusal };
  }

  /** Ingest lookups read the writer (a just-stored parent must be found at once), on `event_write` checkouts. */
  private onWriter<T>(work: (db: Kysely<DB>) => Promise<T>): Promise<T> {
    return this.database.withWriter('event_write', work);
  }
}

function newerOrEqual(current: { id: Buffer; created_at: string }, event: NostrEvent): boolean {
  const at = Number(current.created_at);
  return at > event.created_at || (at === event.created_at && current.id.toString('hex') < event.id);
}

function idOf(raw: unknown): string | undefined {
  const id = (raw as { id?: unknown } | null)?.id;
  return isHex64(id) ? id : undefined;
}

/**
 * database.md §6.3's two replacement transactions: an addressable event (kinds 30000–39999, replaced per
 * `d` tag) is `replace_addressable_event`; a replaceable one (0, 3, 10000–19999, one per pubkey
 * and kind) is `replace_parameterized_event`.
 */
function replacementOperation(dTag: string | null): 'replace_addressable_event' | 'replace_parameterized_event' {
  return dTag === null ? 'replace_parameterized_event' : 'replace_addressable_event';
}
