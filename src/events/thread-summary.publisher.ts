/**
 * Live relay-signed 39005 summaries of thread roots whose counts just changed (relay.md §5.2
 * step 14): fan-out only, never stored. Read on the writer after the commit. Best effort: the
 * write is already durable, so a failed read costs the overlay, never the `OK`.
 */
import { Injectable } from '@nestjs/common';
import { DatabaseService } from '@buzz-relay/read-path';
import { RelaySigner } from '../common/relay-signer.js';
import { threadSummaryOverlay } from '../threads/thread-overlays.js';
import { threadSummaries } from '../threads/thread-summaries.js';
import { EventBus } from './event-bus.js';
import { ThreadAnchor } from './stored-event.js';

/** A thread root and the channel its thread is in. */
export interface ThreadRoot {
  readonly root: ThreadAnchor;
  readonly channelId: string;
}

@Injectable()
export class ThreadSummaryPublisher {
  constructor(
    private readonly database: DatabaseService,
    private readonly signer: RelaySigner,
    private readonly bus: EventBus,
  ) {}

  async publish(communityId: string, roots: readonly ThreadRoot[]): Promise<void> {
    for (const { root, channelId } of roots) {
      try {
        const [summary] = await this.database.withWriter('event_write', (db) => threadSummaries(db, communityId, [root], { repliedOnly: false }));
        if (summary) this.bus.publish({ communityId, event: threadSummaryOverlay(this.signer, summary, channelId), channelId });
      } catch {
        // The overlay is advisory; the bridge recomputes it on the next read.
      }
    }
  }
}
