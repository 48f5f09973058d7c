import { Module } from '@nestjs/common';
import { EventsModule } from '../events/events.module.js';
import { CrossPodFanout } from './cross-pod-fanout.service.js';
import { RedisModule } from './redis.module.js';

/** Several pods on one Redis: the shared connection, presence, and the cross-pod fan-out bridge. */
@Module({ imports: [RedisModule, EventsModule], providers: [CrossPodFanout] })
export class ScaleOutModule {}
