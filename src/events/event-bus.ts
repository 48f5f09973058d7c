import { Injectable } from '@nestjs/common';
import { NostrEvent } from '../nostr/nostr.types.js';

export interface PublishedEvent {
  readonly communityId: string;
  readonly event: NostrEvent;
  readonly channelId: string | null;
  /**
   * `remote` when another pod accepted the event and it arrived over Redis
   * (CrossPodFanout); absent or `local` when this pod accepted it. Only local
   * events are published to other pods.
   */
  readonly origin?: 'local' | 'remote';
}

export type EventListener = (published: PublishedEvent) => void;

/**
 * In-process fan-out of newly stored (and ephemeral) events, whether this pod
 * accepted them or another pod did (relay.md §2.8). Listeners run synchronously
 * and must not throw; a throwing listener is isolated.
 */
@Injectable()
export class EventBus {
  private readonly listeners = new Set<EventListener>();

  subscribe(listener: EventListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  publish(published: PublishedEvent): void {
    for (const listener of this.listeners) {
      try {
        listener(published);
      } catch {
        // A faulty listener must not stop delivery to the others.
      }
    }
  }
}
