/**
 * Gauges an operator reads right after a pod starts (issue 20): `buzz_readiness_state` is 1 on a
 * healthy pod before anything calls /readyz, and the fence gauges show the open fence from the
 * probe's first beat, not from the next sampling tick (set to an hour here, so only the first
 * beat can publish them).
 */
import { relayEnv } from '../harness/relay-fixture.js';
import { startRelay, type RelayProcess } from '../harness/relay-process.js';
import { eventually } from '../harness/eventually.js';
import { createTestDatabase, type TestDatabase } from '../harness/test-database.js';

let db: TestDatabase;
let relay: RelayProcess;

beforeAll(async () => {
  db = await createTestDatabase();
  relay = await startRelay(relayEnv(db, { BUZZ_REPLICA_READ_MAX_AGE_MS: '2000', BUZZ_POOL_METRICS_INTERVAL_SECS: '3600' }));
}, 60_000);

afterAll(async () => {
  await relay?.stop();
  await db?.drop();
}, 60_000);

const gauge = async (name: string): Promise<number | undefined> => {
  const text = await (await fetch(relay.metricsUrl)).text();
  const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
  return m ? Number(m[1]) : undefined;
};

it('reports ready before any /readyz call', async () => {
  expect(await gauge('buzz_readiness_state')).toBe(1);
});

it('publishes the open fence after the first beat, without waiting for the sampling interval', async () => {
  await eventually('buzz_db_replica_fence_open 1', async () => (await gauge('buzz_db_replica_fence_open')) === 1);
  expect(await gauge('buzz_db_replica_heartbeat_age_seconds')).toBeGreaterThanOrEqual(0);
});
