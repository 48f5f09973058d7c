import { DynamicModule, Module } from '@nestjs/common';
import type { AppConfig } from '../config/app-config.js';
import { CommandsModule } from '../commands/commands.module.js';
import { ConfigModule } from '../config/config.module.js';
import { EventsModule } from '../events/events.module.js';
import { MetricsModule } from '../metrics/metrics.module.js';
import { ScaleOutModule } from '../scale-out/scale-out.module.js';
import { relayDatabaseModules } from '../relay-database.modules.js';
import { TenancyModule } from '../tenancy/tenancy.module.js';

/**
 * The operator CLI's Nest context: the relay's own services (the relay-admin and moderation
 * commands, the NIP-43 state, the Redis bridge that carries revocations to running pods) without
 * any transport. No HTTP or WebSocket listener is created.
 */
@Module({})
export class AdminCliModule {
  static forRoot(config: AppConfig): DynamicModule {
    return {
      module: AdminCliModule,
      imports: [ConfigModule.forRoot(config), MetricsModule, ...relayDatabaseModules(config), TenancyModule, EventsModule, CommandsModule, ScaleOutModule],
    };
  }
}
