import { Inject, Injectable } from '@nestjs/common';
import type { AppConfig } from '../config/app-config.js';
import { APP_CONFIG } from '../config/config.tokens.js';
import { counter } from '../metrics/metric-factory.js';
import { RateDecision, SlidingWindowLimiter } from './sliding-window.js';

export type WsVerb = 'EVENT' | 'REQ' | 'COUNT';

/**
 * Per-(community, pubkey) quotas: WebSocket EVENT/REQ/COUNT frames per second,
 * EVENT messages per minute, HTTP bridge calls per minute. AUTH and CLOSE are
 * never limited. Counters live in this process (one pod's view).
 */
@Injectable()
export class RateLimitService {
  private readonly wsFrames: SlidingWindowLimiter;
  private readonly messages: SlidingWindowLimiter;
  private readonly api: SlidingWindowLimiter;
  private readonly rejections = counter({ name: 'buzz_admission_rejections_total', help: 'Requests refused by admission quotas', labelNames: ['transport', 'reason'] });

  constructor(@Inject(APP_CONFIG) config: AppConfig) {
    const r = config.rateLimits;
    this.wsFrames = new SlidingWindowLimiter(r.humanWsEventsPerSec, 1000);
    this.messages = new SlidingWindowLimiter(r.humanMessagesPerMin, 60_000);
    this.api = new SlidingWindowLimiter(r.humanApiCallsPerMin, 60_000);
  }

  ws(communityId: string, pubkey: string, verb: WsVerb): RateDecision {
    const key = `${communityId}:${pubkey}`;
    let d = this.wsFrames.hit(key);
    if (d.allowed && verb === 'EVENT') d = this.messages.hit(key);
    if (!d.allowed) this.rejections.inc({ transport: 'websocket', reason: 'quota' });
    return d;
  }

  http(communityId: string, pubkey: string): RateDecision {
    const d = this.api.hit(`${communityId}:${pubkey}`);
    if (!d.allowed) this.rejections.inc({ transport: 'http', reason: 'quota' });
    return d;
  }
}
