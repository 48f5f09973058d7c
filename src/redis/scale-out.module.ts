import { Module } from '@nestjs/common';
import { EventsModule } from '../events/events.module.js';
import { CrossPodFanout } from './cross-pod-fanout.service.js';
import { GapFillRepository } from './gap-fill.repository.js';
import { RedisModule } from './redis.module.js';

/** Several pods on one Redis: the shared connection, presence, and the cross-pod fan-out bridge with its gap fill. */
@Module({ imports: [RedisModule, EventsModule], providers: [CrossPodFanout, GapFillRepository] })
export class ScaleOutModule {}
