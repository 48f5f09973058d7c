/**
 * Live fan-out between pods (relay.md §2.8, cross-pod path). Every event this pod
 * accepts (stored, or ephemeral) is published on its community's Redis topic,
 * `Channel(id)` or `Global`; every other pod subscribed to that community hands it
 * to its own EventBus as a remote event, and LiveFanout delivers it with the same
 * per-recipient access re-check as a local one.
 *
 * Exactly once: the publishing pod already delivered the event locally, so it
 * must not deliver its own publication again. Before publishing it records a
 * local-echo key (community, event id) for 60 s and drops any received message
 * carrying a key it holds; the message also names the publishing pod, which
 * catches an echo whose key was evicted. Received events are recorded too, so
 * the same ephemeral event submitted on two pods reaches each subscriber once.
 * A pod subscribes to a community's topics while it holds a connection there
 * (LiveFanout retains the pattern).
 *
 * Bounded while Redis is down or slow: a publish is never queued. It fails at
 * once when the connection is not ready, and at most MAX_PENDING_PUBLISHES may
 * await a reply; beyond that the publish is dropped and counted. Local delivery
 * never depends on Redis. Events accepted while Redis is down do not reach other
 * pods (pub/sub has no replay); clients recover them through REQ history.
 */
import { Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { GROUP_KINDS } from '../channels/group-commands.service.js';
import { ChannelAccessService } from '../channels/channel-access.service.js';
import { NostrEvent } from '../common/nostr.types.js';
import { EventBus, PublishedEvent } from '../events/event-bus.js';
import { parseEvent } from '../events/event-validation.js';
import { counter } from '../metrics/metric-factory.js';
import { fanoutTopic } from './redis-keys.js';
import { RedisService } from './redis.service.js';
import { TtlMap } from './ttl-map.js';

export const LOCAL_ECHO_TTL_MS = 60_000;
const ECHO_MAX_ENTRIES = 200_000;
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
  private readonly echoes = new TtlMap<true>(LOCAL_ECHO_TTL_MS, ECHO_MAX_ENTRIES);
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
  private pending = 0;
  private lastFailureLog = 0;
  private readonly detach: Array<() => void> = [];

  constructor(
    private readonly redis: RedisService,
    private readonly bus: EventBus,
    private readonly access: ChannelAccessService,
  ) {}

  onModuleInit(): void {
    if (!this.redis.enabled) return;
    this.detach.push(this.bus.subscribe((p) => p.origin !== 'remote' && this.publish(p)));
    this.detach.push(this.redis.onTopicMessage((topic, message) => this.receive(topic, message)));
  }

  /** Not at module destroy: writes that finish during the shutdown drain still reach other pods. */
  onApplicationShutdown(): void {
    for (const off of this.detach.splice(0)) off();
  }

  private publish({ communityId, channelId, event }: PublishedEvent): void {
    if (!this.redis.commandReady) return this.failed('unavailable');
    if (this.pending >= MAX_PENDING_PUBLISHES) return this.failed('backlog');
    const key = echoKey(communityId, event.id);
    this.echoes.set(key, true);
    const message: FanoutMessage = { pod: this.podId, community: communityId, channel: channelId, event };
    this.pending += 1;
    this.redis
      .publish(fanoutTopic(communityId, channelId), JSON.stringify(message))
      .then(
        () => this.published.inc(),
        (err: Error) => {
          this.echoes.delete(key);
          this.failed('error', err);
        },
      )
      .finally(() => (this.pending -= 1));
  }

  private receive(topic: string, raw: string): void {
    const message = decode(raw);
    if (!message || fanoutTopic(message.community, message.channel) !== topic) return void this.received.inc({ outcome: 'malformed' });
    if (message.pod === this.podId) return void this.received.inc({ outcome: 'own_echo' });
    const key = echoKey(message.community, message.event.id);
    if (this.echoes.has(key)) return void this.received.inc({ outcome: 'duplicate' });
    this.echoes.set(key, true);
    this.received.inc({ outcome: 'delivered' });
    // Membership changed on another pod: this pod's cached access must not outlive it.
    if (MEMBERSHIP_KINDS.has(message.event.kind)) this.access.invalidate(message.community);
    this.multinode.inc();
    this.bus.publish({ communityId: message.community, channelId: message.channel, event: message.event, origin: 'remote' });
  }

  private failed(reason: 'unavailable' | 'backlog' | 'error', err?: Error): void {
    this.publishFailures.inc({ reason });
    const now = Date.now();
    if (now - this.lastFailureLog < 10_000) return;
    this.lastFailureLog = now;
    this.logger.warn(`cross-pod publish failed (${reason})${err ? `: ${err.message}` : ''}; local subscribers are still served`);
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
