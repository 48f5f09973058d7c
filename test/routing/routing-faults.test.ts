/**
 * Real faults against the running probe and RoutedReader (issue 4): replica stopped, frozen
 * (SIGSTOP), WAL replay paused, and the serving writer pool exhausted. Each case waits on
 * conditions (beats, decisions, LSNs), never on a fixed sleep, and heals before the next.
 */
import { sql } from 'kysely';
import { Pool } from 'pg';
import { BOUNDED } from '../../packages/read-path/src/routing/route-predicate.js';
import { createTestDatabase, faultSupport, type TestDatabase } from '../harness/test-database.js';
import { adminPool, DatabaseLayer, delta, routeDecisions, spills, startDatabaseLayer, waitUntil } from './database-layer.js';
import { writerPoolOf } from '../harness/pools.js';

const support = faultSupport();
const maybe = support.supported ? describe : describe.skip;

maybe('routing under real faults', () => {
  let db: TestDatabase;
  let admin: Pool;
  let layer: DatabaseLayer;

  beforeAll(async () => {
    db = await createTestDatabase();
    admin = adminPool(db.writerUrl);
    layer = await startDatabaseLayer(db, { BUZZ_REPLICA_READ_MAX_AGE_MS: '2000', BUZZ_DB_POOL_SIZE: '2', BUZZ_DB_READ_POOL_SIZE: '4' });
    await layer.fence.waitForBeats(2);
  }, 30_000);

  afterEach(async () => {
    await db.cluster.heal();
    await db.waitForReplica(20_000);
  }, 30_000);

  afterAll(async () => {
    await layer?.close();
    await admin?.end();
    await db?.drop();
  }, 30_000);

  const where = () =>
    layer.routed.read({ path: 'req_historical', predicate: BOUNDED }, async (d) => {
      const { rows } = await sql<{ standby: boolean }>`select pg_is_in_recovery() as standby`.execute(d);
      return rows[0].standby ? 'replica' : 'writer';
    });

  /** Reads until the decision for one read is `want`; returns that read's route and spill deltas. */
  async function readUntil(want: (routes: Record<string, number>) => boolean, timeoutMs = 10_000) {
    let last: { served: string; routes: Record<string, number>; spilled: Record<string, number> } | undefined;
    await waitUntil(
      `route decision; last ${JSON.stringify(last)}`,
      async () => {
        const [r0, s0] = [await routeDecisions(), await spills()];
        const served = await where();
        last = { served, routes: delta(r0, await routeDecisions()), spilled: delta(s0, await spills()) };
        return want(last.routes);
      },
      timeoutMs,
      50,
    );
    return last!;
  }

  it('healthy: the probe keeps the heartbeat under one interval and reads are replica-served', async () => {
    await layer.fence.waitForBeats(1);
    expect(layer.fence.ring.heartbeatAgeMs()!).toBeLessThan(500);
    const r = await readUntil((d) => d['req_historical/replica/fresh'] === 1);
    expect(r.served).toBe('replica');
  }, 30_000);

  it('replica stopped: reads fall back to the writer with a reader reason, and recover after restart', async () => {
    await db.cluster.stopReplica();
    const r = await readUntil((d) => Object.keys(d).some((k) => k.startsWith('req_historical/writer/reader_')));
    expect(r.served).toBe('writer');
    expect(Object.keys(r.spilled)[0]).toMatch(/^req_historical\/reader_(validation_error|acquire_timeout)$/);
    await db.cluster.startReplica();
    await db.waitForReplica(20_000);
    expect((await readUntil((d) => d['req_historical/replica/fresh'] === 1, 20_000)).served).toBe('replica');
  }, 30_000);

  it('replica frozen (SIGSTOP): reads fall back within the proof or acquire budget', async () => {
    await db.cluster.freezeReplica();
    const started = Date.now();
    const r = await readUntil((d) => Object.keys(d).some((k) => k.startsWith('req_historical/writer/reader_')));
    expect(r.served).toBe('writer');
    expect(Object.keys(r.routes)[0]).toMatch(/^req_historical\/writer\/reader_(proof_timeout|acquire_timeout)$/);
    expect(Date.now() - started).toBeLessThan(5000);
    await db.cluster.thawReplica();
  }, 30_000);

  it('WAL replay paused: once the proved entry is older than the budget, reads go to the writer (replica_lag)', async () => {
    await db.cluster.pauseReplay();
    const marker = await admin.query<{ id: string }>(`insert into communities (host) values ('paused-replay.example') returning id::text`);
    const r = await readUntil((d) => d['req_historical/writer/stale'] === 1);
    expect(r.served).toBe('writer');
    expect(r.spilled).toEqual({ 'req_historical/replica_lag': 1 });
    // Nothing was served stale beyond its proof meanwhile: the probe kept beating on the writer.
    expect(layer.fence.ring.heartbeatAgeMs()!).toBeLessThan(1500);
    await db.cluster.resumeReplay();
    await db.waitForReplica();
    const seen = await layer.routed.read({ path: 'bridge_query', predicate: BOUNDED }, async (d) =>
      (await sql<{ n: number }>`select count(*)::int as n from communities where id = ${marker.rows[0].id}::uuid`.execute(d)).rows[0].n,
    );
    expect(seen).toBe(1);
  }, 30_000);

  it('serving writer pool exhausted: the probe keeps beating and routed reads stay on the replica', async () => {
    const held = await Promise.all([writerPoolOf(layer.database).connect(), writerPoolOf(layer.database).connect()]);
    try {
      await layer.fence.waitForBeats(2, 3000);
      const r = await readUntil((d) => d['req_historical/replica/fresh'] === 1);
      expect(r.served).toBe('replica');
    } finally {
      for (const c of held) c.release();
    }
  }, 30_000);
});
