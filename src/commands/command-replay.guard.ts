/**
 * Executed commands are not stored, so the events table cannot reject a second copy: a captured
 * 9030 replayed after a 9031 would re-add the member. Each executed command id is marked once per
 * community, in Redis (SET NX, shared by every pod) when BUZZ_REDIS_URL is set and in this process
 * otherwise, for longer than the ±120 s freshness window, so a copy is refused until it is stale.
 */
import { Inject, Injectable } from '@nestjs/common';
import type { AppConfig } from '../config/app-config.js';
import { APP_CONFIG } from '../config/config.tokens.js';
import { communityKey } from '../redis/redis-keys.js';
import { RedisService } from '../redis/redis.service.js';
import { TtlMap } from '../redis/ttl-map.js';
import { reject } from '../nostr/refusal.js';
import { COMMAND_REFUSALS } from './command.refusals.js';
import { COMMAND_MAX_SKEW_SECS } from './command-input.js';

/** Outlives the whole two-sided window: a command signed at +120 s is stale 240 s later. */
const MARK_TTL_SECS = 2 * COMMAND_MAX_SKEW_SECS + 60;
const LOCAL_MAX_ENTRIES = 100_000;

@Injectable()
export class CommandReplayGuard {
  private readonly seen = new TtlMap<true>(MARK_TTL_SECS * 1000, LOCAL_MAX_ENTRIES);

  constructor(
    private readonly redis: RedisService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  /** Marks the command as executed; refuses a second execution. */
  async claim(communityId: string, eventId: string): Promise<void> {
    const key = communityKey(communityId, 'command', eventId);
    if (!(await this.mark(key))) reject(COMMAND_REFUSALS.replayed);
  }

  private async mark(key: string): Promise<boolean> {
    if (!this.redis.enabled) return this.seen.setIfAbsent(key, true);
    try {
      return (await this.redis.client().set(key, '1', 'EX', MARK_TTL_SECS, 'NX')) === 'OK';
    } catch {
      if (this.config.scaleOut.redisFailMode === 'local') return this.seen.setIfAbsent(key, true);
      return reject(COMMAND_REFUSALS.replayUnavailable);
    }
  }
}
