/**
 * The write path shared by WebSocket EVENT and HTTP, as a pipeline: the ordered gates that each map
 * to an `OK` reason (IngestGates), a command executed by kind (CommandRegistry), the event's
 * channel and thread (EventPlacement), storage by kind (EventStorage), then live fan-out of what
 * was newly stored (IngestFanout).
 */
import { Injectable } from '@nestjs/common';
import { isHex64 } from '../nostr/hex.js';
import { NostrEvent } from '../nostr/nostr.types.js';
import { RelayMetrics } from '../metrics/relay-metrics.service.js';
import { mentionsOf } from './event-derivation.js';
import { parseEvent } from '../nostr/event-validation.js';
import { isAddressable, isEphemeral, kindMetricLabel } from '../nostr/kinds.js';
import { StoredEventInput } from './stored-event.js';
import { IngestGates } from './ingest-gates.service.js';
import { rejectionLabel } from './rejection.js';
import { INGEST_REFUSALS } from './ingest.refusals.js';
import { Refusal, Rejection } from '../nostr/refusal.js';
import { CommandRegistry } from './command-registry.js';
import { EventPlacement } from './event-placement.service.js';
import { EventStorage } from './storage/event-storage.service.js';
import { IngestFanout } from './ingest-fanout.js';

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

@Injectable()
export class IngestService {
  constructor(
    private readonly gates: IngestGates,
    private readonly commands: CommandRegistry,
    private readonly placement: EventPlacement,
    private readonly storage: EventStorage,
    private readonly fanout: IngestFanout,
    private readonly metrics: RelayMetrics,
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
    this.gates.beforeSignature(event, ctx.transport);
    // The session author's ban/timeout lookup (a writer round trip) runs while the workers check
    // the signature, two hops in parallel instead of one after the other. moderationGate applies
    // its answer in its usual place, so every refusal before the gate still answers first. The key
    // is the authenticated one, never one a client names, so an unsigned event cannot make the
    // relay read any key it likes (a gift wrap's own key is looked up at the gate). Not for a
    // command: executed before the moderation gate, it checks a ban itself (`fresh`).
    const command = this.commands.commandFor(event.kind);
    const restriction = command === undefined ? this.gates.restrictionAhead(ctx.communityId, ctx.author) : undefined;
    await this.gates.signature(event);
    // Executed, never stored, and before the moderation gate (§5.2 steps 7 and 11): a timed-out
    // moderator can still lift a timeout; the commands check a ban themselves. Reports (1984) go
    // to the moderator queue only.
    if (command !== undefined) return accepted(event, await command.execute(ctx.communityId, event));
    await this.gates.moderationGate(ctx.communityId, ctx.author, event, restriction);
    const { channelId } = await this.placement.channelOf(event, ctx.communityId);
    await this.gates.channelGate(ctx.communityId, event, channelId);
    await this.gates.kindGate(ctx.communityId, event, channelId);
    if (isEphemeral(event.kind)) {
      await this.fanout.ephemeral(ctx.communityId, event, channelId);
      return accepted(event, '');
    }
    const item: StoredEventInput = {
      event,
      channelId,
      dTag: isAddressable(event.kind) ? (event.tags.find((t) => t[0] === 'd')?.[1] ?? '') : null,
      thread: await this.placement.threadOf(event, ctx.communityId, channelId),
      mentions: mentionsOf(event),
    };
    const outcome = await this.storage.store(ctx.communityId, item);
    if (outcome === 'duplicate') return accepted(event, INGEST_REFUSALS.alreadyStored.wire);
    this.metrics.eventsStored.inc();
    await this.fanout.stored(ctx.communityId, item);
    return accepted(event, '');
  }

  private rejected(ctx: IngestContext, eventId: string | undefined, refusal: Refusal): IngestResult {
    this.metrics.eventsRejected.inc({ transport: ctx.transport, reason: rejectionLabel(refusal.code) });
    return { accepted: false, message: refusal.wire, eventId, refusal };
  }
}

function accepted(event: NostrEvent, message: string): IngestResult {
  return { accepted: true, message, eventId: event.id };
}

function idOf(raw: unknown): string | undefined {
  const id = (raw as { id?: unknown } | null)?.id;
  return isHex64(id) ? id : undefined;
}
