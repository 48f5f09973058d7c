/**
 * Live fan-out between pods (relay.md §2.8, cross-pod path). Every event this pod
 * accepts (stored, or ephemeral) is published on its community's Redis topic,
 * `Channel(id)` or `Global`; every other pod subscribed to that community hands it
 * to its own EventBus as a remote event, and LiveFanout delivers it with the same
 * per-recipient access re-check as a local one.
 *
 * Exactly once: the publishing pod already delivered the event locally, so it
 * must not deliver its own publication again. It records a delivered key
 * (community, event id) for every event it accepts, published or not, and drops
 * any received message carrying a key it holds; the message also names the
 * publishing pod, which catches an echo whose key was evicted. Received events
 * are recorded too, so the same ephemeral event submitted on two pods reaches
 * each subscriber once. Keys live BUZZ_REDIS_GAP_FILL_WINDOW_SECS (default 300 s).
 * A pod subscribes to a community's topics while it holds a connection there
 * (LiveFanout retains the pattern).
 *
 * Bounded while Redis is down or slow: a publish is never queued. It fails at
 * once when the connection is not ready, and at most MAX_PENDING_PUBLISHES may
 * await a reply; beyond that the publish is dropped and counted. Local delivery
 * never depends on Redis.
 *
 * Gap fill: pub/sub has no replay, so whenever the subscriber connection comes
 * back (after an outage or any reconnect) the pod waits GAP_FILL_DELAY_MS, long
 * enough for the other pods' publish connections to be back as well, then reads
 * from the writer the stored events of the communities it serves received since
 * the connection was lost (minus GAP_FILL_MARGIN_MS) and delivers them as remote
 * events: the same guarded path, the same per-recipient access re-check, with
 * the delivered keys skipping what it already delivered. The fill starts no
 * earlier than the delivered keys reach back (`coveredSince`), so a longer outage
 * is filled only for its last window and counted as limited; it replays at most
 * BUZZ_REDIS_GAP_FILL_MAX_EVENTS rows and gives up after GAP_FILL_DEADLINE_MS,
 * counting and logging what it left out. Ephemeral events are not stored and are
 * not filled. Not covered: a publisher whose own Redis link stays down longer
 * than GAP_FILL_DELAY_MS after this pod's subscriber reconnected.
 */
import { Inject, Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { GROUP_KINDS } from '../channels/group-commands.service.js';
import { ChannelAccessService } from '../channels/channel-access.service.js';
import { NostrEvent } from '../nostr/nostr.types.js';
import type { AppConfig } from '../config/app-config.js';
import { APP_CONFIG } from '../config/config.tokens.js';
import { EventBus, PublishedEvent } from '../events/event-bus.js';
import { parseEvent } from '../nostr/event-validation.js';
import { counter } from '@buzz-relay/read-path/internal';
import { RoutedReader } from '@buzz-relay/read-path';
import { GapCursor, GapFillRepository } from './gap-fill.repository.js';
import { communityOfFanoutPattern, fanoutTopic, isFanoutTopic } from '../redis/redis-keys.js';
import { RedisService } from '../redis/redis.service.js';
import { TtlMap } from '../redis/ttl-map.js';

const ECHO_MAX_ENTRIES = 200_000;
export const GAP_FILL_DELAY_MS = 3000;
export const GAP_FILL_MARGIN_MS = 5000;
const GAP_FILL_DEADLINE_MS = 30_000;
const GAP_FILL_PAGE = 500;
/** A capped fill counts what it left out up to this many rows. */
const GAP_FILL_COUNT_LIMIT = 100_000;
export const MAX_PENDING_PUBLISHES = 10_000;
const MEMBERSHIP_KINDS: ReadonlySet<number> = new Set(Object.values(GROUP_KINDS));

/** What travels on a fan-out topic. `pod` names the publisher. */
interface FanoutMessage {
  readonly pod: string;
  readonly community: string;
  readonly channel: string | null;
  readonly event: NostrEvent;
}

@Injectable()
export class CrossPodFanout implements OnModuleInit, OnApplicationShutdown {
  /** This process's identity on the fan-out topics. */
  readonly podId = randomUUID();
  private readonly logger = new Logger('CrossPodFanout');
  private readonly echoes: TtlMap<true>;
  private readonly published = counter({ name: 'buzz_redis_published_total', help: 'Events published to Redis for other pods' });
  private readonly publishFailures = counter({
    name: 'buzz_redis_publish_failures_total',
    help: 'Cross-pod publishes that did not reach Redis, by reason',
    labelNames: ['reason'],
  });
  private readonly received = counter({
    name: 'buzz_redis_messages_received_total',
    help: 'Fan-out messages received from Redis, by outcome',
    labelNames: ['outcome'],
  });
  private readonly multinode = counter({ name: 'buzz_multinode_fanout_total', help: 'Events from other pods fanned out on this pod' });
  private readonly gapFillEvents = counter({
    name: 'buzz_redis_gap_fill_events_total',
    help: 'Stored events read back after a Redis subscriber reconnect: delivered, duplicate (already delivered), left_out (beyond the row cap or deadline)',
    labelNames: ['outcome'],
  });
  private readonly gapFills = counter({ name: 'buzz_redis_gap_fills_total', help: 'Gap fills run after a Redis subscriber reconnect, by outcome', labelNames: ['outcome'] });
  private readonly gapFillsLimited = counter({
    name: 'buzz_redis_gap_fill_limited_total',
    help: 'Gap fills that did not cover the whole outage: rows (row cap), deadline, window (outage longer than the duplicate guard)',
    labelNames: ['reason'],
  });
  private gapSince: number | undefined;
  private gapTimer: NodeJS.Timeout | undefined;
  private gapRunning = false;
  private pending = 0;
  private lastFailureLog = 0;
  private readonly detach: Array<() => void> = [];

  constructor(
    private readonly redis: RedisService,
    private readonly bus: EventBus,
    private readonly access: ChannelAccessService,
    private readonly gaps: GapFillRepository,
    private readonly routed: RoutedReader,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {
    this.echoes = new TtlMap<true>(config.scaleOut.gapFillWindowSecs * 1000, ECHO_MAX_ENTRIES);
  }

  onModuleInit(): void {
    if (!this.redis.enabled) return;
    this.detach.push(this.bus.subscribe((p) => p.origin !== 'remote' && this.publish(p)));
    this.detach.push(this.redis.onTopicMessage((topic, message) => this.receive(topic, message)));
    if (this.config.scaleOut.gapFillMaxEvents > 0) this.detach.push(this.redis.onResubscribed((lostAt) => this.scheduleGapFill(lostAt)));
  }

  /** Not at module destroy: writes that finish during the shutdown drain still reach other pods. */
  onApplicationShutdown(): void {
    for (const off of this.detach.splice(0)) off();
    clearTimeout(this.gapTimer);
  }

  private publish({ communityId, channelId, event }: PublishedEvent): void {
    // Recorded even when the publish fails: a later gap fill must not deliver it here again.
    this.echoes.set(echoKey(communityId, event.id), true);
    if (!this.redis.commandReady) return this.failed('unavailable');
    if (this.pending >= MAX_PENDING_PUBLISHES) return this.failed('backlog');
    const message: FanoutMessage = { pod: this.podId, community: communityId, channel: channelId, event };
    this.pending += 1;
    this.redis
      .publish(fanoutTopic(communityId, channelId), JSON.stringify(message))
      .then(
        () => this.published.inc(),
        (err: Error) => this.failed('error', err),
      )
      .finally(() => (this.pending -= 1));
  }

  private receive(topic: string, raw: string): void {
    // Connection control shares the subscriber connection (RevocationBridge reads it).
    if (!isFanoutTopic(topic)) return;
    const message = decode(raw);
    if (!message || fanoutTopic(message.community, message.channel) !== topic) return void this.received.inc({ outcome: 'malformed' });
    if (message.pod === this.podId) return void this.received.inc({ outcome: 'own_echo' });
    if (!this.deliverRemote(message.community, message.channel, message.event)) return void this.received.inc({ outcome: 'duplicate' });
    this.received.inc({ outcome: 'delivered' });
  }

  /** Hands an event another pod accepted to local subscribers unless it was delivered here already. */
  private deliverRemote(communityId: string, channelId: string | null, event: NostrEvent): boolean {
    if (!this.echoes.setIfAbsent(echoKey(communityId, event.id), true)) return false;
    // Membership changed on another pod: this pod's cached access must not outlive it.
    if (MEMBERSHIP_KINDS.has(event.kind)) this.access.invalidate(communityId);
    // Its author's next bounded read here must see it, as on the pod that stored it.
    this.routed.noteWrite({ communityId, pubkey: event.pubkey });
    this.multinode.inc();
    this.bus.publish({ communityId, channelId, event, origin: 'remote' });
    return true;
  }

  private scheduleGapFill(lostAt: number): void {
    this.gapSince = Math.min(this.gapSince ?? lostAt, lostAt);
    if (this.gapTimer || this.gapRunning) return;
    this.gapTimer = setTimeout(() => {
      this.gapTimer = undefined;
      void this.runGapFill();
    }, GAP_FILL_DELAY_MS);
    this.gapTimer.unref();
  }

  private async runGapFill(): Promise<void> {
    const lostAt = this.gapSince;
    this.gapSince = undefined;
    if (lostAt === undefined) return;
    this.gapRunning = true;
    try {
      await this.fillSince(lostAt);
      this.gapFills.inc({ outcome: 'ok' });
    } catch (err) {
      this.gapFills.inc({ outcome: 'error' });
      this.logger.warn({ err }, 'gap fill after the Redis reconnect failed; clients recover missed events through REQ');
    } finally {
      this.gapRunning = false;
      // Another reconnect while this one ran: fill again from its loss.
      if (this.gapSince !== undefined) this.scheduleGapFill(this.gapSince);
    }
  }

  private async fillSince(lostAt: number): Promise<void> {
    const communities = this.redis.retainedPatterns().flatMap((p) => communityOfFanoutPattern(p) ?? []);
    if (communities.length === 0) return;
    let since = lostAt - GAP_FILL_MARGIN_MS;
    const guarded = this.echoes.coveredSince();
    if (since < guarded) {
      this.gapFillsLimited.inc({ reason: 'window' });
      this.logger.warn(`Redis subscriber was down since ${new Date(lostAt).toISOString()}, longer than the duplicate guard holds; gap fill starts at ${new Date(guarded).toISOString()}`);
      since = guarded;
    }
    // Memberships may have changed on other pods while their messages were missed.
    for (const c of communities) this.access.invalidate(c);
    const { gapFillMaxEvents: cap } = this.config.scaleOut;
    const deadline = Date.now() + GAP_FILL_DEADLINE_MS;
    let cursor: GapCursor | undefined;
    let read = 0;
    do {
      const page = await this.gaps.page(communities, since, cursor, Math.min(GAP_FILL_PAGE, cap - read));
      for (const row of page.rows) {
        const delivered = this.deliverRemote(row.communityId, row.channelId, row.event);
        this.gapFillEvents.inc({ outcome: delivered ? 'delivered' : 'duplicate' });
      }
      read += page.rows.length;
      cursor = page.next;
    } while (cursor && read < cap && Date.now() < deadline);
    if (!cursor) return;
    const leftOut = await this.gaps.remaining(communities, since, cursor, GAP_FILL_COUNT_LIMIT);
    if (leftOut === 0) return;
    const reason = read >= cap ? 'rows' : 'deadline';
    this.gapFillsLimited.inc({ reason });
    this.gapFillEvents.inc({ outcome: 'left_out' }, leftOut);
    this.logger.warn(`gap fill stopped (${reason}) after ${read} events; ${leftOut}${leftOut >= GAP_FILL_COUNT_LIMIT ? '+' : ''} more were not replayed live`);
  }

  private failed(reason: 'unavailable' | 'backlog' | 'error', err?: Error): void {
    this.publishFailures.inc({ reason });
    const now = Date.now();
    if (now - this.lastFailureLog < 10_000) return;
    this.lastFailureLog = now;
    this.logger.warn({ reason, ...(err ? { err } : {}) }, `cross-pod publish failed (${reason}); local subscribers are still served`);
  }
}

function echoKey(communityId: string, eventId: string): string {
  return `${communityId}:${eventId}`;
}

function decode(raw: string): FanoutMessage | undefined {
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    return undefined;
  }
  const m = value as Partial<Record<keyof FanoutMessage, unknown>> | null;
  if (!m || typeof m.pod !== 'string' || typeof m.community !== 'string') return undefined;
  if (m.channel !== null && typeof m.channel !== 'string') return undefined;
  const parsed = parseEvent(m.event);
  return parsed.ok ? { pod: m.pod, community: m.community, channel: m.channel, event: parsed.event } : undefined;
}
