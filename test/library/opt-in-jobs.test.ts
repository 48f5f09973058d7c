/**
 * Issue 19 item 5: an importer's process runs the relay's migrations, partition maintenance and a
 * fence probe only when it asks. With all three off, the layer starts on an empty database (none
 * of the relay's tables), creates nothing there, serves writer reads, and routes to the writer.
 */
import { INestApplicationContext, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { sql } from 'kysely';
import { randomBytes } from 'node:crypto';
import type { Pool } from 'pg';
import { DatabaseModule } from '../../packages/read-path/src/database/database.module.js';
import type { DatabaseModuleOptions } from '../../packages/read-path/src/database/database.options.js';
import { DatabaseService } from '../../packages/read-path/src/database/database.service.js';
import { HistoryReadsModule } from '../../packages/read-path/src/history-reads/history-reads.module.js';
import { ReplicaFenceModule } from '../../packages/read-path/src/replica-fence/replica-fence.module.js';
import { BOUNDED } from '../../packages/read-path/src/routing/route-predicate.js';
import { RoutedReaderModule } from '../../packages/read-path/src/routing/routed-reader.module.js';
import { RoutedReader } from '../../packages/read-path/src/routing/routed-reader.service.js';
import { createTestDatabase, type TestDatabase } from '../harness/test-database.js';
import { adminPool } from '../routing/database-layer.js';

@Module({})
class ImporterModule {}

let db: TestDatabase;
let admin: Pool;
let empty: string;

const withDatabase = (url: string, name: string) => {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
};

async function start(options: Partial<DatabaseModuleOptions>): Promise<INestApplicationContext> {
  return NestFactory.createApplicationContext(
    {
      module: ImporterModule,
      imports: [
        DatabaseModule.forRoot({ writerUrl: withDatabase(db.writerUrl, empty), readerUrl: db.readerUrl, poolSize: 2, readPoolSize: 2, migrate: false, partitionMaintenance: false, ...options }),
        ReplicaFenceModule.forRoot({ probe: false }),
        HistoryReadsModule.forRoot({ readPoolSize: 2 }),
        RoutedReaderModule.forRoot({ readMaxAgeMs: 2000 }),
      ],
    },
    { logger: false },
  );
}

const tables = async () => (await admin.query<{ n: string }>(`select count(*)::text as n from pg_tables where schemaname = 'public'`)).rows[0].n;

beforeAll(async () => {
  db = await createTestDatabase();
  empty = `buzz_empty_${randomBytes(4).toString('hex')}`;
  const creator = adminPool(db.writerUrl, 1);
  await creator.query(`create database ${empty}`);
  await creator.end();
  admin = adminPool(withDatabase(db.writerUrl, empty), 1);
}, 60_000);

afterAll(async () => {
  await admin?.end();
  const dropper = adminPool(db.writerUrl, 1);
  await dropper.query(`drop database if exists ${empty} with (force)`);
  await dropper.end();
  await db?.drop();
}, 60_000);

describe('opt-in jobs (issue 19 item 5)', () => {
  it('no migrations, no partitions, no probe: starts on an empty database, creates nothing, reads on the writer', async () => {
    const app = await start({});
    try {
      expect(await tables()).toBe('0');
      const one = await app.get(DatabaseService).withWriter('readiness', async (d) => (await sql<{ x: number }>`select 1 as x`.execute(d)).rows[0].x);
      expect(one).toBe(1);
      const where = await app.get(RoutedReader).read({ path: 'bridge_query', predicate: BOUNDED }, async (d) =>
        (await sql<{ s: boolean }>`select pg_is_in_recovery() as s`.execute(d)).rows[0].s ? 'replica' : 'writer',
      );
      expect(where).toBe('writer');
    } finally {
      await app.close();
    }
    expect(await tables()).toBe('0');
  });

  it('migrate: true applies the relay schema at start', async () => {
    const app = await start({ migrate: true, partitionMaintenance: { monthsAhead: 1 } });
    try {
      const names = (await admin.query<{ tablename: string }>(`select tablename from pg_tables where schemaname = 'public'`)).rows.map((r) => r.tablename);
      expect(names).toEqual(expect.arrayContaining(['events', 'replica_heartbeat']));
    } finally {
      await app.close();
    }
  });
});
