import { Module } from '@nestjs/common';
import { EventsModule } from '../events/events.module.js';
import { RedisModule } from '../redis/redis.module.js';
import { HttpAuthService } from './http-auth.service.js';

@Module({
  imports: [EventsModule, RedisModule],
  providers: [HttpAuthService],
  exports: [HttpAuthService],
})
export class AuthModule {}
