/**
 * ReadPathModule on the real writer + replica pair, as an importer starts it: one module, one
 * option set, and RoutedReader.replicaServing() / whenReplicaServing() saying when its bounded
 * reads are proved on the replica and, when they are not, what is missing.
 */
import { INestApplicationContext, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { sql } from 'kysely';
import { ReadPathModule, type ReadPathModuleOptions } from '../../packages/read-path/src/read-path.module.js';
import { BOUNDED } from '../../packages/read-path/src/routing/route-predicate.js';
import { RoutedReader } from '../../packages/read-path/src/routing/routed-reader.service.js';
import { createTestDatabase, faultSupport, type TestDatabase } from '../harness/test-database.js';

@Module({})
class ImporterModule {}

const itWithFaults = faultSupport().supported ? it : it.skip;
let db: TestDatabase;
const apps: INestApplicationContext[] = [];

async function start(extra: Partial<ReadPathModuleOptions> = {}): Promise<RoutedReader> {
  const options: ReadPathModuleOptions = {
    database: { writerUrl: db.writerUrl, readerUrl: db.readerUrl, poolSize: 2, readPoolSize: 2, migrate: false, partitionMaintenance: false },
    routing: { readMaxAgeMs: 2000 },
    ...extra,
  };
  const app = await NestFactory.createApplicationContext({ module: ImporterModule, imports: [ReadPathModule.forRoot(options)] }, { logger: false });
  apps.push(app);
  return app.get(RoutedReader);
}

/** Which server answered a routed read: the replica says it is in recovery. */
const servedBy = (routed: RoutedReader) =>
  routed.read({ path: 'bridge_query', predicate: BOUNDED }, async (d) => ((await sql<{ r: boolean }>`select pg_is_in_recovery() as r`.execute(d)).rows[0].r ? 'replica' : 'writer'));

beforeAll(async () => {
  db = await createTestDatabase();
}, 60_000);

afterAll(async () => {
  for (const app of apps) await app.close();
  await db?.drop();
}, 60_000);

describe('ReadPathModule with the fence probe (the default)', () => {
  it('becomes serving once the probe has a proof, and then a routed read is served by the replica', async () => {
    const routed = await start();
    await routed.whenReplicaServing(20_000);
    expect(await routed.replicaServing()).toMatchObject({ serving: true });
    expect(await servedBy(routed)).toBe('replica');
  });

  itWithFaults('stops serving when replay stops, says why, and serves again when it resumes', async () => {
    const routed = await start();
    await routed.whenReplicaServing(20_000);
    await db.cluster.pauseReplay();
    try {
      // The probe goes on proving the writer's heartbeats; the replica's stops moving and ages.
      await new Promise((r) => setTimeout(r, 2500));
      expect(await routed.replicaServing()).toMatchObject({ serving: false, reason: expect.stringMatching(/^the replica's proof is \d+ ms old, over readMaxAgeMs 2000$/) });
      await expect(routed.whenReplicaServing(300)).rejects.toThrow(/^replica not serving after 300 ms: the replica's proof is \d+ ms old/);
      expect(await servedBy(routed)).toBe('writer');
    } finally {
      await db.cluster.resumeReplay();
    }
    await routed.whenReplicaServing(20_000);
    expect(await servedBy(routed)).toBe('replica');
  }, 60_000);
});

describe('ReadPathModule without what serving needs', () => {
  it('names the option: no probe, a zero budget, no reader', async () => {
    const noProbe = await start({ fence: { probe: false } });
    await expect(noProbe.whenReplicaServing(100)).rejects.toThrow('replica not serving after 100 ms: ReplicaFenceModule probe is off: no proof exists in this process');
    const noBudget = await start({ routing: { readMaxAgeMs: 0 } });
    expect(await noBudget.replicaServing()).toMatchObject({ serving: false, reason: 'RoutedReaderModule readMaxAgeMs is 0: bounded reads stay on the writer' });
    const noReader = await start({ database: { writerUrl: db.writerUrl, poolSize: 2, migrate: false, partitionMaintenance: false } });
    expect(await noReader.replicaServing()).toMatchObject({ serving: false, reason: 'no reader: DatabaseModule readerUrl is not set' });
  });
});
