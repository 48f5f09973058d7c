import { Module } from '@nestjs/common';
import { EventsModule } from '../events/events.module.js';
import { HttpAuthService } from './http-auth.service.js';

@Module({
  imports: [EventsModule],
  providers: [HttpAuthService],
  exports: [HttpAuthService],
})
export class AuthModule {}
