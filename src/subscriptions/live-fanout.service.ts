/**
 * Live delivery of stored and ephemeral events to matching subscriptions.
 * Channel events reach only subscriptions whose every filter is pinned to that
 * channel by `#h`; global subscriptions receive only channel-less events.
 */
import { Injectable, OnModuleDestroy } from '@nestjs/common';
import { NostrEvent, NostrFilter } from '../common/nostr.types.js';
import { EventBus, PublishedEvent } from '../events/event-bus.js';
import { matchFilter } from '../events/filter.js';
import { RelayMetrics } from '../metrics/relay-metrics.service.js';
import { RelayConnection } from './relay-connection.js';

@Injectable()
export class LiveFanout implements OnModuleDestroy {
  private readonly byCommunity = new Map<string, Set<RelayConnection>>();
  private readonly unsubscribe: () => void;

  constructor(
    bus: EventBus,
    private readonly metrics: RelayMetrics,
  ) {
    this.unsubscribe = bus.subscribe((p) => this.deliver(p));
  }

  add(conn: RelayConnection): void {
    let set = this.byCommunity.get(conn.communityId);
    if (!set) this.byCommunity.set(conn.communityId, (set = new Set()));
    set.add(conn);
  }

  remove(conn: RelayConnection): void {
    const set = this.byCommunity.get(conn.communityId);
    set?.delete(conn);
    if (set?.size === 0) this.byCommunity.delete(conn.communityId);
  }

  onModuleDestroy(): void {
    this.unsubscribe();
  }

  private deliver({ communityId, event, channelId }: PublishedEvent): void {
    const conns = this.byCommunity.get(communityId);
    let recipients = 0;
    if (conns) {
      let json: string | undefined;
      for (const conn of conns) {
        if (conn.authState !== 'authenticated') continue;
        for (const [subId, sub] of conn.subscriptions) {
          if (!subscriptionWants(sub.filters, event, channelId)) continue;
          json ??= JSON.stringify(event);
          conn.sendRaw(`["EVENT",${JSON.stringify(subId)},${json}]`);
          recipients += 1;
        }
      }
    }
    this.metrics.fanoutRecipients.observe(recipients);
  }
}

/** True when one of the filters matches and the channel boundary allows it. */
export function subscriptionWants(filters: readonly NostrFilter[], event: NostrEvent, channelId: string | null): boolean {
  const channelScoped = filters.every((f) => (f.tags.h?.length ?? 0) > 0);
  if (channelId !== null && !channelScoped) return false;
  if (channelId === null && channelScoped) return false;
  return filters.some((f) => matchFilter(event, f));
}
