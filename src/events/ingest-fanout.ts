/**
 * Live delivery of what ingest accepted, on this pod's event bus (scale-out carries it to the
 * others): an ephemeral event as it came (a presence update recorded first), a stored one after
 * its commit, and for a new reply its root's 39005 summary (§5.2 step 14).
 */
import { Injectable } from '@nestjs/common';
import { NostrEvent } from '../nostr/nostr.types.js';
import { KIND } from '../nostr/kinds.js';
import { PresenceService } from '../redis/presence.service.js';
import { EventBus } from './event-bus.js';
import { StoredEventInput } from './stored-event.js';
import { ThreadSummaryPublisher } from './thread-summary.publisher.js';

@Injectable()
export class IngestFanout {
  constructor(
    private readonly bus: EventBus,
    private readonly presence: PresenceService,
    private readonly summaries: ThreadSummaryPublisher,
  ) {}

  /** Ephemeral events are never stored: presence is recorded (Redis or in process), then fan-out only. */
  async ephemeral(communityId: string, event: NostrEvent, channelId: string | null): Promise<void> {
    if (event.kind === KIND.PRESENCE) await this.presence.apply(communityId, event);
    this.bus.publish({ communityId, event, channelId });
  }

  /** A newly stored event, then its thread root's summary (fan-out only, never stored). */
  async stored(communityId: string, item: StoredEventInput): Promise<void> {
    this.bus.publish({ communityId, event: item.event, channelId: item.channelId });
    if (item.thread?.root && item.channelId) await this.summaries.publish(communityId, [{ root: item.thread.root, channelId: item.channelId }]);
  }
}
