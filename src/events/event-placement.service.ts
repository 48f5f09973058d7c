/**
 * Where an event goes (relay.md §5.2 steps 9 and 13): its channel, taken from its target or
 * coordinate when it names one, and its place in a thread. Both read the writer, where a target
 * or parent stored a moment ago is found at once, on `event_write` checkouts.
 */
import { Injectable } from '@nestjs/common';
import { Kysely } from 'kysely';
import { DatabaseService, DB } from '@buzz-relay/read-path';
import { isHex64 } from '../nostr/hex.js';
import { KIND } from '../nostr/kinds.js';
import { NostrEvent } from '../nostr/nostr.types.js';
import { reject } from '../nostr/refusal.js';
import { deriveChannel, threadRefsOf } from './event-derivation.js';
import { EventWriteRepository } from './event-write.repository.js';
import { INGEST_REFUSALS, TARGET_NOT_FOUND } from './ingest.refusals.js';
import { ThreadPlacement } from './stored-event.js';
import { TargetVisibility } from './target-visibility.service.js';

const THREAD_KINDS = new Set([9, 1111, 40002, 45001, 45003]);
/** `e` tags a reaction may carry besides its target: the target's thread context, which clients copy (NIP-25). */
const MAX_REACTION_CONTEXT_REFS = 16;

@Injectable()
export class EventPlacement {
  constructor(
    private readonly database: DatabaseService,
    private readonly repo: EventWriteRepository,
    private readonly targets: TargetVisibility,
  ) {}

  /**
   * A reaction or deletion takes its target's channel. A target its author may not read counts as
   * missing (TargetVisibility): a reaction is refused as for a missing target, a deletion is a
   * channel-less NIP-09 request that deletes nothing, both answered as for an id stored nowhere.
   */
  async channelOf(event: NostrEvent, communityId: string): Promise<{ channelId: string | null }> {
    const derived = deriveChannel(event);
    if (!derived.ok) return reject(derived.reason);
    const { fromTarget, fromCoordinate } = derived;
    if (fromTarget) {
      const target = await this.withWriter(async (db) => this.targets.seen(db, communityId, event.pubkey, await this.repo.findTarget(db, communityId, fromTarget)));
      if (target === undefined && event.kind === 7) reject(TARGET_NOT_FOUND.reaction);
      // A comment on an event that is not here, or not readable by its author, is refused alike:
      // stored as global it would name a private message's id to everyone.
      if (target === undefined && event.kind === KIND.COMMENT) reject(TARGET_NOT_FOUND.comment);
      if (target !== undefined && event.kind === 7) await this.reactionRefsInChannel(event, communityId, fromTarget, target.channelId);
      return { channelId: target?.channelId ?? null };
    }
    if (fromCoordinate) {
      const target = await this.withWriter(async (db) => {
        const channelId = await this.repo.findCoordinateChannel(db, communityId, fromCoordinate);
        return this.targets.seen(db, communityId, event.pubkey, channelId === undefined ? undefined : { pubkey: fromCoordinate.pubkey, channelId });
      });
      return { channelId: target?.channelId ?? null };
    }
    return derived;
  }

  /** A reply's parent, root and depth; null for an event that is not in a thread. */
  async threadOf(event: NostrEvent, communityId: string, channelId: string | null): Promise<ThreadPlacement | null> {
    if (!channelId || !THREAD_KINDS.has(event.kind)) return null;
    const refs = threadRefsOf(event);
    if (!refs) return { parent: null, root: null, depth: 0 };
    const parent = await this.withWriter((db) => this.repo.findThreadParent(db, communityId, refs.parent));
    if (!parent) return reject(TARGET_NOT_FOUND.threadParent);
    if (parent.channel_id !== channelId) {
      // The reply's own channel passed the channel gate; a parent elsewhere is named only if readable.
      const seen = await this.withWriter((db) => this.targets.seen(db, communityId, event.pubkey, { pubkey: parent.pubkey, channelId: parent.channel_id }));
      reject(seen ? INGEST_REFUSALS.threadParentElsewhere : TARGET_NOT_FOUND.threadParent);
    }
    const parentAnchor = { id: parent.event_id.toString('hex'), createdAt: Number(parent.event_created_at) };
    const root = parent.root_event_id
      ? { id: parent.root_event_id.toString('hex'), createdAt: Number(parent.root_event_created_at) }
      : parentAnchor;
    return { parent: parentAnchor, root, depth: parent.depth + 1 };
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
    const elsewhere = await this.withWriter(async (db) => {
      for (const id of others) {
        const ref = await this.repo.findTarget(db, communityId, id);
        if (ref !== undefined && ref.channelId !== channelId) return true;
      }
      return false;
    });
    if (elsewhere) reject(TARGET_NOT_FOUND.reaction);
  }

  private withWriter<T>(work: (db: Kysely<DB>) => Promise<T>): Promise<T> {
    return this.database.withWriter('event_write', work);
  }
}
