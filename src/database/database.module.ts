import { Module } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { DatabaseMetrics } from '../metrics/database-metrics.service.js';
import { DatabaseErrorFilter } from './database-error.filter.js';
import { ConfigurableDatabaseModule } from './database.options.js';
import { DatabaseService } from './database.service.js';

/**
 * The database layer's root: writer and reader pools, the writer's Kysely handle, the migrator, pg
 * error classification and the `buzz_db_*` metric families:
 * `DatabaseModule.forRoot({ writerUrl, readerUrl, ... })` (or `forRootAsync`). It knows nothing of
 * proofs or routes; ReplicaFenceModule, HistoryReadsModule and RoutedReaderModule build on it.
 * It starts on `onApplicationBootstrap` and stops on the shutdown hooks. It binds
 * DatabaseErrorFilter as the application's HTTP filter (APP_FILTER): database failures answer 503
 * `query timed out` / `database unavailable` in an importer's app as in the relay.
 */
@Module({
  providers: [DatabaseMetrics, DatabaseService, { provide: APP_FILTER, useClass: DatabaseErrorFilter }],
  exports: [DatabaseMetrics, DatabaseService],
})
export class DatabaseModule extends ConfigurableDatabaseModule {}
