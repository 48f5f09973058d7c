/**
 * The relay as an importer of its own database library: its AppConfig mapped onto the read
 * path's options (ReadPathModule). The relay runs everything a deployment needs once per pod: the fence probe,
 * partition maintenance, and migrations unless BUZZ_AUTO_MIGRATE=false.
 */
import type { DynamicModule } from '@nestjs/common';
import type { AppConfig } from './config/app-config.js';
import type { DatabaseModuleOptions } from '@buzz-relay/read-path';
import { ReadPathModule } from '@buzz-relay/read-path';

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

/** The read path (ReadPathModule: the database layer's four modules), configured from AppConfig. */
export function relayDatabaseModules(config: AppConfig): DynamicModule[] {
  return [
    ReadPathModule.forRoot({
      database: relayDatabaseOptions(config),
      fence: { probe: true, probeIntervalMs: config.replica.probeIntervalMs, metricsIntervalSecs: config.database.poolMetricsIntervalSecs },
      routing: {
        readMaxAgeMs: config.replica.readMaxAgeMs,
        writerReadCap: config.database.writerReadCap,
        writerHeavyReadCap: config.database.writerHeavyReadCap,
        historyHeavyReadCap: config.database.historyHeavyReadCap,
        tenantSharePercent: config.limits.keySharePercent,
        clientReadTimeoutMs: config.database.clientReadTimeoutMs,
      },
    }),
  ];
}
