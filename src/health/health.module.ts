import { Module } from '@nestjs/common';
import { RedisModule } from '../redis/redis.module.js';
import { HealthController } from './health.controller.js';
import { LifecycleState } from './lifecycle-state.js';
import { ReadinessSampler } from './readiness-sampler.service.js';

@Module({ imports: [RedisModule], controllers: [HealthController], providers: [LifecycleState, ReadinessSampler], exports: [LifecycleState] })
export class HealthModule {}
