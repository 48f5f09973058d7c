import { Module } from '@nestjs/common';
import { DatabaseMetrics } from '../metrics/database-metrics.service.js';
import { ConfigurableDatabaseModule } from './database.options.js';
import { DatabaseService } from './database.service.js';
import { ReaderPool } from './reader-pool.js';

/**
 * The database layer's root: writer and reader pools, the writer's Kysely handle, the migrator, pg
 * error classification and the `buzz_db_*` metric families:
 * `DatabaseModule.forRoot({ writerUrl, readerUrl, ... })` (or `forRootAsync`). It knows nothing of
 * proofs or routes; ReplicaFenceModule, HistoryReadsModule and RoutedReaderModule build on it.
 * It starts on `onApplicationBootstrap` and stops on the shutdown hooks. It binds no exception
 * filter: the app's errors are the app's. DatabaseErrorFilter answers the layer's own errors
 * (503 `query timed out` / `database unavailable`) where the app binds it.
 */
@Module({
  providers: [DatabaseMetrics, ReaderPool, DatabaseService],
  // ReaderPool is exported to the routing layer's modules only in effect: the package's entry
  // points do not export the class, so no importing app can name it to inject it.
  exports: [DatabaseMetrics, ReaderPool, DatabaseService],
})
export class DatabaseModule extends ConfigurableDatabaseModule {}
