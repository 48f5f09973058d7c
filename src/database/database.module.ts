import { DynamicModule, Global, Module } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import type { AppConfig } from '../config/app-config.js';
import { ConfigModule } from '../config/config.module.js';
import { HistoryReadsModule } from '../history-reads/history-reads.module.js';
import { DatabaseMetrics } from '../metrics/database-metrics.service.js';
import { ReplicaFenceService } from '../replica-fence/replica-fence.service.js';
import { RoutePaths } from '../routing/route-paths.js';
import { RoutedReader } from '../routing/routed-reader.service.js';
import { DatabaseErrorFilter } from './database-error.filter.js';
import { DatabaseService } from './database.service.js';

const PROVIDERS = [DatabaseMetrics, DatabaseService, ReplicaFenceService, RoutePaths, RoutedReader];
/** The one HTTP exception filter (database-error.filter.ts), bound for the whole application. */
const HTTP_FILTER = { provide: APP_FILTER, useClass: DatabaseErrorFilter };

/**
 * The database layer: pools, the replica fence and the RoutedReader (with the history-read
 * gate it hands permits from). It needs only the
 * APP_CONFIG provider, so any Nest host can use routed reads without the relay's transports:
 *
 *   imports: [DatabaseModule.forRoot(config)]   // then: await app.get(DatabaseService).start()
 *
 * It binds DatabaseErrorFilter as the application's HTTP filter (APP_FILTER): database failures
 * answer 503 `query timed out` / `database unavailable` in the importer's app as in the relay.
 *
 * The relay imports the plain module next to its global ConfigModule.
 */
@Global()
@Module({ imports: [HistoryReadsModule], providers: [...PROVIDERS, HTTP_FILTER], exports: [...PROVIDERS, HistoryReadsModule] })
export class DatabaseModule {
  static forRoot(config: AppConfig): DynamicModule {
    // Extends the static metadata above (HistoryReadsModule is imported and re-exported there).
    return { module: DatabaseModule, global: true, imports: [ConfigModule.forRoot(config)], providers: [...PROVIDERS, HTTP_FILTER], exports: PROVIDERS };
  }
}
