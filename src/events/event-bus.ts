import { Injectable } from '@nestjs/common';
import { NostrEvent } from '../common/nostr.types.js';

export interface PublishedEvent {
  readonly communityId: string;
  readonly event: NostrEvent;
  readonly channelId: string | null;
}

export type EventListener = (published: PublishedEvent) => void;

/**
 * In-process fan-out of newly stored (and ephemeral) events. Listeners run
 * synchronously and must not throw; a throwing listener is isolated.
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
