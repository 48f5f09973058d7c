import { Inject, Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import type { AppConfig } from '../config/app-config.js';
import { APP_CONFIG } from '../config/config.tokens.js';
import { counter } from '@buzz-relay/read-path/internal';
import { rateLimitKey } from '../redis/redis-keys.js';
import { RedisService } from '../redis/redis.service.js';
import { Bucket, SharedSlidingWindow } from './shared-sliding-window.js';
import { SlidingWindowLimiter } from './sliding-window.js';
import { RATE_LIMIT_REFUSALS } from './rate-limit.refusals.js';
import { Refusal } from '../nostr/refusal.js';
import { TokenBucketLimiter } from './token-bucket.js';

export type WsVerb = 'EVENT' | 'REQ' | 'COUNT';
/** `agent`: the session carries a proved NIP-OA owner (relay.md §2.4: 120 messages/min instead of 60). */
export type QuotaTier = 'human' | 'agent';
type BucketName = 'ws' | 'msg' | 'api' | 'agent_msg' | 'agent_api';

/** `unavailable` marks the fail-closed refusal when Redis fails (HTTP 503 rather than 429). */
export type AdmissionDecision = { readonly allowed: true } | { readonly allowed: false; readonly reason: Refusal; readonly unavailable: boolean };

const ADMITTED: AdmissionDecision = { allowed: true };

/** The spec's Redis key suffixes: a tier changes the limit applied to the pubkey's log, not the log. */
const SHARED_KEY: Record<BucketName, 'ws' | 'msg' | 'api'> = { ws: 'ws', msg: 'msg', api: 'api', agent_msg: 'msg', agent_api: 'api' };

/**
 * Per-(community, pubkey) quotas (relay.md §2.4, §3.1 step 4): WebSocket
 * EVENT/REQ/COUNT frames per second (a token bucket: a burst of
 * BUZZ_RATE_LIMIT_HUMAN_WS_BURST, then the per-second rate), EVENT messages per minute, HTTP bridge
 * calls per minute (`POST /events` spends a message too). AUTH and CLOSE are never limited. With BUZZ_REDIS_URL the counters
 * are shared by every pod and a Redis failure refuses the request (fail closed),
 * or with BUZZ_REDIS_FAIL_MODE=local is counted in this process instead; without
 * BUZZ_REDIS_URL they live in this process.
 */
@Injectable()
export class RateLimitService {
  private readonly local: Record<BucketName, SlidingWindowLimiter | TokenBucketLimiter>;
  private readonly windows: Record<BucketName, { limit: number; windowMs: number; burst?: number }>;
  private readonly shared: SharedSlidingWindow | undefined;
  private readonly localFallback: boolean;
  private readonly fallbacks = counter({
    name: 'buzz_admission_local_fallbacks_total',
    help: 'Admission checks counted in process because Redis failed (BUZZ_REDIS_FAIL_MODE=local)',
    labelNames: ['transport'],
  });
  private readonly rejections = counter({ name: 'buzz_admission_rejections_total', help: 'Requests refused by admission quotas', labelNames: ['transport', 'reason'] });

  constructor(@Inject(APP_CONFIG) config: AppConfig, redis: RedisService) {
    const r = config.rateLimits;
    this.windows = {
      // A token bucket: a new connection may open its subscriptions at once (the burst), a
      // flood is held to the per-second rate.
      ws: { limit: r.humanWsEventsPerSec, windowMs: 1000, burst: r.humanWsBurst },
      msg: { limit: r.humanMessagesPerMin, windowMs: 60_000 },
      api: { limit: r.humanApiCallsPerMin, windowMs: 60_000 },
      agent_msg: { limit: r.agentStandardMessagesPerMin, windowMs: 60_000 },
      agent_api: { limit: r.agentStandardApiCallsPerMin, windowMs: 60_000 },
    };
    const limiter = (name: BucketName) => new SlidingWindowLimiter(this.windows[name].limit, this.windows[name].windowMs);
    this.local = { ws: new TokenBucketLimiter(r.humanWsEventsPerSec, r.humanWsBurst), msg: limiter('msg'), api: limiter('api'), agent_msg: limiter('agent_msg'), agent_api: limiter('agent_api') };
    this.localFallback = config.scaleOut.redisFailMode === 'local';
    this.shared = redis.enabled ? new SharedSlidingWindow(() => redis.client(), randomUUID()) : undefined;
  }

  ws(communityId: string, pubkey: string, verb: WsVerb, tier: QuotaTier = 'human'): Promise<AdmissionDecision> {
    return this.admit('websocket', communityId, pubkey, verb === 'EVENT' ? ['ws', tier === 'agent' ? 'agent_msg' : 'msg'] : ['ws']);
  }

  http(communityId: string, pubkey: string, tier: QuotaTier = 'human'): Promise<AdmissionDecision> {
    return this.admit('http', communityId, pubkey, [tier === 'agent' ? 'agent_api' : 'api']);
  }

  /**
   * `POST /events`: an API call that is also a message, so it counts against the messages
   * quota shared with WebSocket EVENT (a key cannot post more by switching transport).
   */
  httpWrite(communityId: string, pubkey: string, tier: QuotaTier = 'human'): Promise<AdmissionDecision> {
    return this.admit('http', communityId, pubkey, tier === 'agent' ? ['agent_api', 'agent_msg'] : ['api', 'msg']);
  }

  private async admit(transport: 'websocket' | 'http', communityId: string, pubkey: string, names: BucketName[]): Promise<AdmissionDecision> {
    let retryAfterSecs: number;
    try {
      retryAfterSecs = this.shared ? await this.sharedHit(communityId, pubkey, names) : this.localHit(`${communityId}:${pubkey}`, names);
    } catch {
      if (!this.localFallback) {
        this.rejections.inc({ transport, reason: 'unavailable' });
        return { allowed: false, reason: RATE_LIMIT_REFUSALS.sharedAdmissionUnavailable, unavailable: true };
      }
      this.fallbacks.inc({ transport });
      retryAfterSecs = this.localHit(`${communityId}:${pubkey}`, names);
    }
    if (retryAfterSecs === 0) return ADMITTED;
    this.rejections.inc({ transport, reason: 'quota' });
    return { allowed: false, reason: RATE_LIMIT_REFUSALS.quotaExceeded(retryAfterSecs), unavailable: false };
  }

  /** 0 when admitted, else whole seconds to wait (at least 1). */
  private localHit(key: string, names: readonly BucketName[]): number {
    for (const name of names) {
      const d = this.local[name].hit(key);
      if (!d.allowed) return d.retryAfterSecs;
    }
    return 0;
  }

  private async sharedHit(communityId: string, pubkey: string, names: readonly BucketName[]): Promise<number> {
    const buckets: Bucket[] = names.map((name) => ({ key: rateLimitKey(communityId, pubkey, SHARED_KEY[name]), ...this.windows[name] }));
    const retryMs = await this.shared!.hit(buckets);
    return retryMs < 0 ? 0 : Math.max(1, Math.ceil(retryMs / 1000));
  }
}
