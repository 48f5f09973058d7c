import { Module } from '@nestjs/common';
import { EventsModule } from '../events/events.module.js';
import { CrossPodFanout } from './cross-pod-fanout.service.js';
import { GapFillRepository } from './gap-fill.repository.js';
import { RedisModule } from '../redis/redis.module.js';
import { RevocationBridge } from './revocation-bridge.service.js';

/**
 * Several pods on one Redis: the shared connection, presence, the cross-pod fan-out bridge with
 * its gap fill, and the cross-pod connection control (bans, revocations).
 */
@Module({ imports: [RedisModule, EventsModule], providers: [CrossPodFanout, GapFillRepository, RevocationBridge], exports: [RevocationBridge] })
export class ScaleOutModule {}
