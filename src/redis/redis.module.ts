import { Module } from '@nestjs/common';
import { PresenceService } from './presence.service.js';
import { RedisService } from './redis.service.js';

/**
 * The shared Redis connection and the presence store: quotas, the NIP-98 replay set, presence
 * and cross-pod fan-out all use the one connection pair, and each module that injects them
 * imports this one (one instance either way: Nest builds a static module once). With
 * BUZZ_REDIS_URL unset nothing connects and each user falls back to its in-process form.
 */
@Module({ providers: [RedisService, PresenceService], exports: [RedisService, PresenceService] })
export class RedisModule {}
