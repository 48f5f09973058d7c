import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module.js';
import { EventsModule } from '../events/events.module.js';
import { TenancyModule } from '../tenancy/tenancy.module.js';
import { BridgeController } from './bridge.controller.js';
import { Nip11Controller } from './nip11.controller.js';

@Module({
  imports: [EventsModule, AuthModule, TenancyModule],
  controllers: [BridgeController, Nip11Controller],
})
export class BridgeModule {}
