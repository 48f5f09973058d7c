import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module.js';
import { EventsModule } from '../events/events.module.js';
import { RateLimitModule } from '../ratelimit/rate-limit.module.js';
import { TenancyModule } from '../tenancy/tenancy.module.js';
import { RedisModule } from '../redis/redis.module.js';
import { BridgeAdmission } from './bridge-admission.service.js';
import { BridgePresence } from './bridge-presence.service.js';
import { ChannelWindowService } from './channel-window.service.js';
import { QueryAnswerMemory } from './query-answer-memory.js';
import { BridgeQueryService } from './bridge-query.service.js';
import { BridgeReadsRepository } from './bridge-reads.repository.js';
import { BridgeController } from './bridge.controller.js';
import { EventsController } from './events.controller.js';
import { ModerationController } from './moderation.controller.js';
import { Nip11Controller } from './nip11.controller.js';
import { ThreadWindowRepository } from './thread-window.repository.js';
import { ThreadWindowService } from './thread-window.service.js';

@Module({
  imports: [EventsModule, AuthModule, TenancyModule, RedisModule, RateLimitModule],
  // RelaySigner comes from ChannelsModule (via EventsModule): one relay key for stored state and overlays.
  providers: [BridgeAdmission, BridgeReadsRepository, BridgeQueryService, ChannelWindowService, BridgePresence, QueryAnswerMemory, ThreadWindowRepository, ThreadWindowService],
  controllers: [BridgeController, EventsController, Nip11Controller, ModerationController],
})
export class BridgeModule {}
