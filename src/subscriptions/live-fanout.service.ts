/**
 * Live delivery of stored and ephemeral events to matching subscriptions.
 * Channel events reach only subscriptions authorised for that channel; global
 * subscriptions receive channel-less events only. Each recipient's access is
 * checked again at send time (cached, failing closed), and deliveries to one
 * connection keep their order.
 */
import { Injectable, OnModuleDestroy } from '@nestjs/common';
import { ChannelAccessService } from '../channels/channel-access.service.js';
import { NostrEvent } from '../common/nostr.types.js';
import { EventBus, PublishedEvent } from '../events/event-bus.js';
import { matchFilter } from '../events/filter.js';
import { eventVisibleToReader } from '../events/visibility.js';
import { RelayMetrics } from '../metrics/relay-metrics.service.js';
import { LiveSubscription, RelayConnection } from './relay-connection.js';

@Injectable()
export class LiveFanout implements OnModuleDestroy {
  private readonly byCommunity = new Map<string, Set<RelayConnection>>();
  private readonly unsubscribe: () => void;

  constructor(
    bus: EventBus,
    private readonly access: ChannelAccessService,
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
    let recipients = 0;
    const json = JSON.stringify(event);
    for (const conn of this.byCommunity.get(communityId) ?? []) {
      if (conn.authState !== 'authenticated' || !conn.pubkey) continue;
      const subs = [...conn.subscriptions].filter(([, sub]) => subscriptionWants(sub, event, channelId, conn.pubkey!));
      if (subs.length === 0) continue;
      recipients += subs.length;
      conn.fanoutChain = conn.fanoutChain.then(() => this.sendChecked(conn, subs, json, communityId, channelId));
    }
    this.metrics.fanoutRecipients.observe(recipients);
  }

  private async sendChecked(conn: RelayConnection, subs: Array<[string, LiveSubscription]>, json: string, communityId: string, channelId: string | null): Promise<void> {
    if (channelId !== null && !(await this.access.canRead(communityId, channelId, conn.pubkey!))) return;
    for (const [subId, sub] of subs) {
      // The subscription may have been closed or replaced while the check ran.
      if (conn.subscriptions.get(subId)?.token !== sub.token) continue;
      conn.sendRaw(`["EVENT",${JSON.stringify(subId)},${json}]`);
    }
  }
}

/** True when the subscription's scope admits the event and one of its filters matches. */
export function subscriptionWants(sub: LiveSubscription, event: NostrEvent, channelId: string | null, reader: string): boolean {
  const { scope } = sub;
  if (!sub.live) return false;
  if (channelId === null && !scope.includeGlobal) return false;
  if (channelId !== null) {
    const pinned = sub.filters.every((f) => (f.tags.h?.length ?? 0) > 0);
    if (!pinned) return false;
    if (scope.channels !== 'any' && !scope.channels.includes(channelId)) return false;
  }
  return eventVisibleToReader(event, reader) && sub.filters.some((f) => matchFilter(event, f));
}
