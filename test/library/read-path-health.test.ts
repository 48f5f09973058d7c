/**
 * The read path's terminus health indicator (`@buzz-relay/read-path/terminus`) on the real writer + replica,
 * wired as an importer wires a custom indicator: TerminusModule imported, the indicator provided,
 * HealthCheckService running it. Up while bounded reads are proved on the replica, with the
 * proof's age; down, with the reason, when replay stops past the budget or the fence is closed.
 */
import { type LoggerService, ServiceUnavailableException } from '@nestjs/common';
import { HealthCheckService, type HealthCheckResult, TerminusModule } from '@nestjs/terminus';
import { Test, type TestingModule } from '@nestjs/testing';
import { ReadPathModule, type ReadPathModuleOptions } from '../../packages/read-path/src/read-path.module.js';
import { ReadPathHealthIndicator } from '../../packages/read-path/src/terminus.js';
import { RoutedReader } from '../../packages/read-path/src/routing/routed-reader.service.js';
import { createTestDatabase, faultSupport, type TestDatabase } from '../harness/test-database.js';
import { waitUntil } from '../routing/database-layer.js';

const itWithFaults = faultSupport().supported ? it : it.skip;
const silent: LoggerService = { log: () => undefined, error: () => undefined, warn: () => undefined };
let db: TestDatabase;
const apps: TestingModule[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
}, 60_000);

afterAll(async () => {
  for (const app of apps) await app.close();
  await db?.drop();
}, 60_000);

async function start(fence?: ReadPathModuleOptions['fence']): Promise<{ routed: RoutedReader; check: () => Promise<HealthCheckResult> }> {
  const app = await Test.createTestingModule({
    imports: [
      ReadPathModule.forRoot({
        database: { writerUrl: db.writerUrl, readerUrl: db.readerUrl, poolSize: 2, readPoolSize: 2, migrate: false, partitionMaintenance: false },
        fence,
        routing: { readMaxAgeMs: 2000 },
      }),
      TerminusModule.forRoot({ logger: false }),
    ],
    providers: [ReadPathHealthIndicator],
  })
    .setLogger(silent)
    .compile();
  apps.push(app);
  await app.init();
  const health = app.get(HealthCheckService);
  const indicator = app.get(ReadPathHealthIndicator);
  return { routed: app.get(RoutedReader), check: () => health.check([() => indicator.isHealthy('replica')]) };
}

/** The check's result when it fails: terminus answers a down indicator with a 503 carrying the details. */
const failure = (check: () => Promise<HealthCheckResult>) =>
  check().then(
    (ok) => ({ unexpectedlyOk: ok }),
    (err: unknown) => (err instanceof ServiceUnavailableException ? (err.getResponse() as HealthCheckResult) : Promise.reject(err)),
  );

describe('ReadPathHealthIndicator', () => {
  it('up while the replica serves, with the fence state and the proof ages', async () => {
    const { routed, check } = await start();
    await routed.whenReplicaServing(20_000);
    const result = await check();
    expect(result.status).toBe('ok');
    expect(result.details.replica).toEqual({ status: 'up', fence: 'running', proofAgeMs: expect.any(Number), heartbeatAgeMs: expect.any(Number) });
  });

  itWithFaults('down, with the reason, once paused replay leaves the proof older than readMaxAgeMs; up again after', async () => {
    const { routed, check } = await start();
    await routed.whenReplicaServing(20_000);
    await db.cluster.pauseReplay();
    try {
      await waitUntil('the replica to stop serving', async () => !(await routed.replicaServing()).serving, 20_000, 50);
      const result = await failure(check);
      expect(result).toMatchObject({ status: 'error', error: { replica: { status: 'down', fence: 'running', proofAgeMs: expect.any(Number) } } });
      expect((result as HealthCheckResult).details.replica.reason).toMatch(/^the replica's proof is \d+ ms old, over readMaxAgeMs 2000$/);
    } finally {
      await db.cluster.resumeReplay();
    }
    await routed.whenReplicaServing(20_000);
    expect((await check()).status).toBe('ok');
  }, 60_000);

  it('down, with the reason in the options\' words, when the fence is closed (probe off)', async () => {
    const { check } = await start({ probe: false });
    expect(await failure(check)).toMatchObject({
      status: 'error',
      error: { replica: { status: 'down', fence: 'disabled', reason: 'ReplicaFenceModule probe is off: no proof exists in this process' } },
    });
  });
});
