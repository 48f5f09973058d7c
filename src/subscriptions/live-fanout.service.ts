/**
 * Live delivery of stored and ephemeral events to matching subscriptions, for
 * events this pod accepted and events other pods accepted (they arrive on the
 * EventBus from CrossPodFanout). Channel events reach only subscriptions
 * authorised for that channel; global subscriptions receive channel-less events
 * only. Each recipient's access is checked again at send time (cached, failing
 * closed), and deliveries to one connection keep their order.
 *
 * It is also the pod's registry of connections by community: the pod listens to
 * a community's Redis fan-out topics while it holds a connection there, and when
 * a pubkey's last socket in a community closes its presence is cleared.
 */
import { Injectable, OnModuleDestroy } from '@nestjs/common';
import { ChannelAccessService } from '../channels/channel-access.service.js';
import { CHANNEL_ACCESS_REFUSALS } from '../channels/channel-access.refusals.js';
import { GROUP_KINDS } from '../channels/group-commands.service.js';
import { NostrEvent } from '../nostr/nostr.types.js';
import { EventBus, PublishedEvent } from '../events/event-bus.js';
import { matchFilter } from '../nostr/filter.js';
import { eventVisibleToReader } from '../events/visibility.js';
import { LifecycleState } from '../health/lifecycle-state.js';
import { RelayMetrics } from '../metrics/relay-metrics.service.js';
import { PresenceService } from '../redis/presence.service.js';
import { fanoutPattern } from '../redis/redis-keys.js';
import { RedisService } from '../redis/redis.service.js';
import type { LiveClaim } from './history-overlap.js';
import { OutputTurns } from './output-turns.js';
import { LiveSubscription, RelayConnection } from './relay-connection.js';

/** NIP-29 commands after which some readers may have lost a channel. */
const ACCESS_REVOKING_KINDS: ReadonlySet<number> = new Set([GROUP_KINDS.REMOVE_USER, GROUP_KINDS.LEAVE, GROUP_KINDS.EDIT_METADATA, GROUP_KINDS.DELETE_GROUP]);

@Injectable()
export class LiveFanout implements OnModuleDestroy {
  private readonly byCommunity = new Map<string, Set<RelayConnection>>();
  /**
   * Authenticated sockets per community and pubkey on this pod, so a closing socket knows in O(1)
   * whether it was its pubkey's last (presence is cleared then). Scanning the community's sockets
   * instead cost O(n) per close: a storm of 5,000 clients leaving held the event loop for 40 ms
   * runs of that scan.
   */
  private readonly authenticatedCount = new Map<string, number>();
  private readonly counted = new WeakSet<RelayConnection>();
  private readonly unsubscribe: () => void;

  constructor(
    bus: EventBus,
    private readonly access: ChannelAccessService,
    private readonly metrics: RelayMetrics,
    private readonly redis: RedisService,
    private readonly presence: PresenceService,
    private readonly lifecycle: LifecycleState,
    private readonly turns: OutputTurns,
  ) {
    this.unsubscribe = bus.subscribe((p) => this.deliver(p));
  }

  add(conn: RelayConnection): void {
    let set = this.byCommunity.get(conn.communityId);
    if (!set) {
      this.byCommunity.set(conn.communityId, (set = new Set()));
      if (this.redis.enabled) this.redis.retainPattern(fanoutPattern(conn.communityId));
    }
    set.add(conn);
  }

  remove(conn: RelayConnection): void {
    const set = this.byCommunity.get(conn.communityId);
    if (!set?.delete(conn)) return;
    if (set.size === 0) {
      this.byCommunity.delete(conn.communityId);
      if (this.redis.enabled) this.redis.releasePattern(fanoutPattern(conn.communityId));
    }
    if (this.wasLastSocket(conn) && !this.lifecycle.draining) {
      void this.presence.clear(conn.communityId, conn.pubkey!); // failures are counted and logged there
    }
  }

  /** `conn` (added, not yet removed) authenticated: counted for its pubkey until it is removed. Idempotent. */
  authenticated(conn: RelayConnection): void {
    if (conn.authState !== 'authenticated' || !conn.pubkey || this.counted.has(conn)) return;
    if (!this.byCommunity.get(conn.communityId)?.has(conn)) return;
    this.counted.add(conn);
    const key = socketKey(conn);
    this.authenticatedCount.set(key, (this.authenticatedCount.get(key) ?? 0) + 1);
  }

  /** Every open connection on this pod (graceful shutdown walks them). */
  *connections(): IterableIterator<RelayConnection> {
    for (const set of this.byCommunity.values()) yield* set;
  }

  onModuleDestroy(): void {
    this.unsubscribe();
  }

  /** Uncounts a removed conn; true when it was its pubkey's last authenticated socket in its community on this pod. */
  private wasLastSocket(conn: RelayConnection): boolean {
    if (!this.counted.delete(conn)) return false;
    const key = socketKey(conn);
    const left = (this.authenticatedCount.get(key) ?? 1) - 1;
    if (left > 0) {
      this.authenticatedCount.set(key, left);
      return false;
    }
    this.authenticatedCount.delete(key);
    return true;
  }

  private deliver({ communityId, event, channelId }: PublishedEvent): void {
    let recipients = 0;
    const frames = liveFrames(JSON.stringify(event));
    for (const conn of this.byCommunity.get(communityId) ?? []) {
      if (conn.authState !== 'authenticated' || !conn.pubkey) continue;
      // Decided now, as the event is published: a subscription still reading its history gets no
      // live copy of a page row, and its page sends the event itself if it gets there before the
      // live frame is queued (HistoryOverlap).
      const subs: LiveDelivery[] = [];
      for (const [subId, sub] of conn.subscriptions) {
        if (!subscriptionWants(sub, event, channelId, conn.pubkey)) continue;
        const claim = sub.overlap === undefined ? undefined : sub.overlap.liveMay(event.id);
        if (sub.overlap !== undefined && claim === undefined) continue;
        subs.push({ subId, sub, claim });
      }
      if (subs.length === 0) continue;
      recipients += subs.length;
      conn.fanoutChain = conn.fanoutChain.then(() => this.sendChecked(conn, subs, frames, communityId, channelId));
    }
    this.metrics.fanoutRecipients.observe(recipients);
    if (channelId !== null && ACCESS_REVOKING_KINDS.has(event.kind)) this.evictLostAccess(communityId, channelId);
  }

  /**
   * Channel eviction (relay.md §2.9): after a command that can take a channel away from readers
   * (remove-user, leave, a switch to private, delete), every channel-scoped subscription (its
   * filters name channels with `#h`) authorised for that channel whose pubkey can no longer read
   * it is retired with a terminal
   * `CLOSED "restricted: not a channel member"`, in order with the connection's deliveries. A
   * CLOSED that cannot be queued cancels the connection. Runs on every pod: the command event
   * reaches the others over Redis, after their access caches for the community were dropped.
   * An access lookup that fails evicts nothing (send-time checks still fail closed).
   */
  private evictLostAccess(communityId: string, channelId: string): void {
    for (const conn of this.byCommunity.get(communityId) ?? []) {
      const pubkey = conn.pubkey;
      if (conn.authState !== 'authenticated' || !pubkey) continue;
      const held = [...conn.subscriptions].filter(([, sub]) => channelScoped(sub) && sub.scope.channels !== 'any' && sub.scope.channels.includes(channelId));
      if (held.length === 0) continue;
      conn.fanoutChain = conn.fanoutChain.then(async () => {
        const readable = await this.access.accessible(communityId, pubkey).then(
          (ids) => ids.has(channelId),
          () => true,
        );
        if (readable) return;
        for (const [subId, sub] of held) {
          if (!conn.retireIfOwner(subId, sub.token)) continue;
          this.metrics.channelEvictions.inc();
          if (conn.sendClosed(subId, CHANNEL_ACCESS_REFUSALS.notChannelMember) !== 'sent') return;
        }
      });
    }
  }

  private async sendChecked(conn: RelayConnection, subs: readonly LiveDelivery[], frames: (subId: string) => Buffer, communityId: string, channelId: string | null): Promise<void> {
    if (channelId !== null && !(await this.access.canRead(communityId, channelId, conn.pubkey!))) return;
    // In a turn (OutputTurns): an event fanned out to thousands of sockets does not hold the
    // event loop, and its publisher's OK is not queued behind every copy of it.
    await this.turns.run(() => sendLive(conn, subs, frames));
  }
}

function socketKey(conn: RelayConnection): string {
  return `${conn.communityId}\n${conn.pubkey}`;
}

/** Every filter names channels (`#h`): only such subscriptions receive channel events live. */
function channelScoped(sub: LiveSubscription): boolean {
  return sub.filters.every((f) => (f.tags.h?.length ?? 0) > 0);
}

/** True when the subscription's scope admits the event and one of its filters matches. */
export function subscriptionWants(sub: LiveSubscription, event: NostrEvent, channelId: string | null, reader: string): boolean {
  const { scope } = sub;
  if (!sub.live) return false;
  if (channelId === null && !scope.includeGlobal) return false;
  if (channelId !== null) {
    if (!channelScoped(sub)) return false;
    if (scope.channels !== 'any' && !scope.channels.includes(channelId)) return false;
  }
  return eventVisibleToReader(event, reader) && sub.filters.some((f) => matchFilter(event, f, channelId));
}

/** One event's EVENT frame per subscription id, built once: subscribers with the same id share the bytes. */
function liveFrames(json: string): (subId: string) => Buffer {
  const bySubId = new Map<string, Buffer>();
  return (subId) => {
    let frame = bySubId.get(subId);
    if (frame === undefined) bySubId.set(subId, (frame = Buffer.from(`["EVENT",${JSON.stringify(subId)},${json}]`)));
    return frame;
  };
}

/** One subscription's live copy of one event, and its claim against the subscription's history page. */
interface LiveDelivery {
  readonly subId: string;
  readonly sub: LiveSubscription;
  readonly claim: LiveClaim | undefined;
}

function sendLive(conn: RelayConnection, subs: readonly LiveDelivery[], frames: (subId: string) => Buffer): void {
  for (const { subId, sub, claim } of subs) {
    // The subscription may have been closed or replaced while the check ran.
    if (conn.subscriptions.get(subId)?.token !== sub.token) continue;
    // Its history page sent the event before its EOSE.
    if (claim?.takenByPage) continue;
    // A live event that does not fit ends the subscription: a gap the client is told about.
    const result = conn.sendRaw(frames(subId));
    if (claim !== undefined && result === 'sent') claim.sent = true;
    if (result === 'full') conn.shedSubscription(subId, sub.token);
  }
  conn.flush();
}
