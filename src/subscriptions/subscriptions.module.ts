import { Module } from '@nestjs/common';
import { EventsModule } from '../events/events.module.js';
import { HealthModule } from '../health/health.module.js';
import { RateLimitModule } from '../ratelimit/rate-limit.module.js';
import { RedisModule } from '../redis/redis.module.js';
import { AccessRevoker } from './access-revoker.service.js';
import { AuthHandler } from './auth.handler.js';
import { BanEnforcer } from './ban-enforcer.service.js';
import { ConnectionAdmission } from './connection-admission.service.js';
import { EventHandler } from './event.handler.js';
import { HandlerGate } from './handler-gate.js';
import { LiveFanout } from './live-fanout.service.js';
import { OutputTurns } from './output-turns.js';
import { RelayGateway } from './relay.gateway.js';
import { FrameRouter } from './frame-router.js';
import { ReadAdmission } from './read-admission.service.js';
import { ReqHandler } from './req.handler.js';

@Module({
  imports: [EventsModule, RedisModule, RateLimitModule, HealthModule],
  providers: [
    { provide: OutputTurns, useFactory: () => new OutputTurns() },
    ConnectionAdmission,
    HandlerGate,
    LiveFanout,
    BanEnforcer,
    AccessRevoker,
    AuthHandler,
    EventHandler,
    ReadAdmission,
    ReqHandler,
    FrameRouter,
    RelayGateway,
  ],
  exports: [RelayGateway, ConnectionAdmission],
})
export class SubscriptionsModule {}
