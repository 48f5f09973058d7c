import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module.js';
import { RelaySigner } from '../common/relay-signer.js';
import type { AppConfig } from '../config/app-config.js';
import { APP_CONFIG } from '../config/config.tokens.js';
import { EventsModule } from '../events/events.module.js';
import { TenancyModule } from '../tenancy/tenancy.module.js';
import { BridgeQueryService } from './bridge-query.service.js';
import { BridgeReadsRepository } from './bridge-reads.repository.js';
import { BridgeController } from './bridge.controller.js';
import { Nip11Controller } from './nip11.controller.js';

@Module({
  imports: [EventsModule, AuthModule, TenancyModule],
  providers: [
    BridgeReadsRepository,
    BridgeQueryService,
    { provide: RelaySigner, inject: [APP_CONFIG], useFactory: (config: AppConfig) => new RelaySigner(config.relayPrivateKey) },
  ],
  controllers: [BridgeController, Nip11Controller],
})
export class BridgeModule {}
