import { Module } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { DatabaseErrorFilter, ReadPathModule, type ReadPathModuleOptions } from '@buzz-relay/read-path';
import { ReportsController } from './reports.controller.js';
import { ReportsRepository } from './reports.repository.js';

function readPathOptions(env: NodeJS.ProcessEnv): ReadPathModuleOptions {
  return {
    // The relay runs the migrations and the partitions; this service only reads and proves freshness.
    database: {
      writerUrl: env.REPORTS_WRITER_URL ?? '',
      readerUrl: env.REPORTS_READER_URL,
      poolSize: 4,
      readPoolSize: Number(env.REPORTS_READ_POOL_SIZE ?? 4),
      migrate: false,
      partitionMaintenance: false,
    },
    fence: { probe: true },
    // Its own route label for buzz_db_route_decision{path=…}, beside the relay's.
    routing: { readMaxAgeMs: Number(env.REPORTS_READ_MAX_AGE_MS ?? 2000), routePathLabels: ['reports_by_id'] },
  };
}

@Module({
  imports: [
    // The environment is read when the app is created, not when this file is loaded, so an e2e
    // test can start the app with its own settings.
    ReadPathModule.forRootAsync({ useFactory: () => readPathOptions(process.env) }),
  ],
  controllers: [ReportsController],
  // The read path's own errors (shed reads, an unavailable database, a statement deadline) answer
  // 503 with `{"error": …}` and Retry-After; every other error keeps Nest's format.
  providers: [ReportsRepository, { provide: APP_FILTER, useClass: DatabaseErrorFilter }],
})
export class AppModule {}
