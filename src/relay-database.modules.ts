/**
 * The relay as an importer of its own database library: its AppConfig mapped onto the four
 * modules' options. The relay runs everything a deployment needs once per pod: the fence probe,
 * partition maintenance, and migrations unless BUZZ_AUTO_MIGRATE=false.
 */
import type { DynamicModule } from '@nestjs/common';
import type { AppConfig } from './config/app-config.js';
import { DatabaseModule } from './database/database.module.js';
import type { DatabaseModuleOptions } from './database/database.options.js';
import { HistoryReadsModule } from './history-reads/history-reads.module.js';
import { ReplicaFenceModule } from './replica-fence/replica-fence.module.js';
import { RoutedReaderModule } from './routing/routed-reader.module.js';

export function relayDatabaseOptions(config: AppConfig): DatabaseModuleOptions {
  const db = config.database;
  if (!db.url) throw new Error('DATABASE_URL is not set and no embedded database was started');
  return {
    writerUrl: db.url,
    readerUrl: db.readUrl,
    poolSize: db.poolSize,
    readPoolSize: db.readPoolSize,
    statementTimeoutMs: db.statementTimeoutMs,
    lockTimeoutMs: db.lockTimeoutMs,
    idleTxnTimeoutMs: db.idleTxnTimeoutMs,
    statementCacheSize: db.statementCacheSize,
    searchPoolSize: db.searchPoolSize,
    searchStatementTimeoutMs: db.clientReadTimeoutMs,
    migrate: db.autoMigrate,
    partitionMaintenance: { monthsAhead: db.partitionMonthsAhead },
  };
}

/** DatabaseModule, ReplicaFenceModule, HistoryReadsModule and RoutedReaderModule, configured from AppConfig. */
export function relayDatabaseModules(config: AppConfig): DynamicModule[] {
  return [
    DatabaseModule.forRoot(relayDatabaseOptions(config)),
    ReplicaFenceModule.forRoot({
      probe: true,
      probeIntervalMs: config.replica.probeIntervalMs,
      metricsIntervalSecs: config.database.poolMetricsIntervalSecs,
    }),
    HistoryReadsModule.forRoot({ readPoolSize: config.database.readPoolSize, tenantSharePercent: config.limits.keySharePercent }),
    RoutedReaderModule.forRoot({
      readMaxAgeMs: config.replica.readMaxAgeMs,
      writerReadCap: config.database.writerReadCap,
      writerHeavyReadCap: config.database.writerHeavyReadCap,
      tenantSharePercent: config.limits.keySharePercent,
      clientReadTimeoutMs: config.database.clientReadTimeoutMs,
    }),
  ];
}
