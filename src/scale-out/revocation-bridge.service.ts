/**
 * Carries bans and access revocations to every pod (relay.md §2.9: "the manager can close sockets
 * by pubkey across the fleet"). A ban announced on this pod (BanNotices) or a membership removal
 * (AccessRevocations) is published on the community's control topic; every other pod announces it
 * again locally, where BanEnforcer and AccessRevoker act on the sockets it holds. Pods subscribe
 * to every community's control topic for as long as they run (the traffic is one message per
 * moderation action). Without BUZZ_REDIS_URL there is one pod and nothing to carry.
 *
 * Best effort like the live fan-out: a publish that fails is counted and logged, and other pods
 * fall back on their periodic ban sweep (BUZZ_BAN_RECHECK_MS); a removed member's sockets there
 * stay open until they close (docs/moderation.md).
 */
import { Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { counter } from '@buzz-relay/read-path/internal';
import { AccessRevocations, RevocationReason } from '../moderation/access-revocations.js';
import { BanNotices } from '../moderation/ban-notices.js';
import { CONTROL_PATTERN, controlTopic } from '../redis/redis-keys.js';
import { RedisService } from '../redis/redis.service.js';
import { isHex64 } from '../nostr/hex.js';

interface ControlMessage {
  readonly pod: string;
  readonly type: 'ban' | 'revoke';
  readonly community: string;
  readonly pubkey: string;
  readonly reason?: RevocationReason;
}

@Injectable()
export class RevocationBridge implements OnModuleInit, OnApplicationShutdown {
  private readonly podId = randomUUID();
  private readonly logger = new Logger('RevocationBridge');
  private readonly messages = counter({
    name: 'buzz_redis_control_messages_total',
    help: 'Cross-pod connection-control messages (bans, access revocations), by direction and outcome',
    labelNames: ['direction', 'outcome'],
  });
  private readonly detach: Array<() => void> = [];
  private readonly inflight = new Set<Promise<unknown>>();
  /** Set while this pod re-announces a message from another pod, so it is not published back. */
  private relaying = false;

  constructor(
    private readonly redis: RedisService,
    private readonly bans: BanNotices,
    private readonly revocations: AccessRevocations,
  ) {}

  onModuleInit(): void {
    if (!this.redis.enabled) return;
    this.redis.retainPattern(CONTROL_PATTERN);
    this.detach.push(() => this.redis.releasePattern(CONTROL_PATTERN));
    this.detach.push(this.redis.onTopicMessage((topic, raw) => this.receive(topic, raw)));
    this.detach.push(
      this.bans.subscribe(async (community, pubkey) => {
        if (!this.relaying) this.publish({ pod: this.podId, type: 'ban', community, pubkey });
      }),
    );
    this.detach.push(
      this.revocations.subscribe((r, origin) => {
        if (origin === 'local') this.publish({ pod: this.podId, type: 'revoke', community: r.communityId, pubkey: r.pubkey, reason: r.reason });
      }),
    );
  }

  /** Resolves when every publish started so far has finished (the operator CLI waits before exiting). */
  async flush(): Promise<void> {
    await Promise.allSettled([...this.inflight]);
  }

  onApplicationShutdown(): void {
    for (const off of this.detach.splice(0)) off();
  }

  private publish(message: ControlMessage): void {
    const sent = this.redis
      .publish(controlTopic(message.community), JSON.stringify(message))
      .then(
        () => this.messages.inc({ direction: 'out', outcome: 'published' }),
        (err: Error) => {
          this.messages.inc({ direction: 'out', outcome: 'failed' });
          this.logger.warn({ type: message.type, err }, `control publish failed (${message.type}); other pods enforce at their next ban sweep`);
        },
      )
      .finally(() => this.inflight.delete(sent));
    this.inflight.add(sent);
  }

  private receive(topic: string, raw: string): void {
    if (!topic.endsWith(':control')) return;
    const message = decode(raw);
    if (!message || controlTopic(message.community) !== topic) return void this.messages.inc({ direction: 'in', outcome: 'malformed' });
    if (message.pod === this.podId) return void this.messages.inc({ direction: 'in', outcome: 'own_echo' });
    this.messages.inc({ direction: 'in', outcome: 'applied' });
    if (message.type === 'revoke') {
      this.revocations.announce({ communityId: message.community, pubkey: message.pubkey, reason: message.reason ?? 'not_relay_member' }, 'remote');
      return;
    }
    this.relaying = true;
    try {
      void this.bans.announce(message.community, message.pubkey);
    } finally {
      this.relaying = false;
    }
  }
}

function decode(raw: string): ControlMessage | undefined {
  try {
    const m = JSON.parse(raw) as Partial<ControlMessage> | null;
    if (!m || typeof m.pod !== 'string' || typeof m.community !== 'string' || typeof m.pubkey !== 'string' || !isHex64(m.pubkey)) return undefined;
    if (m.type !== 'ban' && m.type !== 'revoke') return undefined;
    return { pod: m.pod, type: m.type, community: m.community, pubkey: m.pubkey, reason: m.reason === 'not_relay_member' ? m.reason : undefined };
  } catch {
    return undefined;
  }
}
