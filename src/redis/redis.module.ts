import { Global, Module } from '@nestjs/common';
import { PresenceService } from './presence.service.js';
import { RedisService } from './redis.service.js';

/**
 * The shared Redis connection and the presence store, available everywhere:
 * quotas, the NIP-98 replay set, presence and cross-pod fan-out all use the one
 * connection pair. With BUZZ_REDIS_URL unset nothing connects and each user
 * falls back to its in-process form.
 */
@Global()
@Module({ providers: [RedisService, PresenceService], exports: [RedisService, PresenceService] })
export class RedisModule {}
