/**
 * Pool instrumentation that database.md §6.2 and §6.6 name, on the real writer + replica: the
 * writer pairs `readiness`, `maintenance` and `event_write`, the `cancelled` acquire outcome, and
 * the writer connection-setup steps with real faults (a refused dial, a server that never answers,
 * a database whose default isolation is wrong).
 */
import { createServer, type Server, type Socket } from 'node:net';
import type { Pool } from 'pg';
import { register } from 'prom-client';
import { CONNECTION_STEPS } from '../../packages/read-path/src/database/connection-steps.js';
import { loadConfig } from '../../src/config/app-config.js';
import { poolSettings } from '../../packages/read-path/src/database/database.options.js';
import { relayDatabaseOptions } from '../../src/relay-database.modules.js';
import { createSearchPool, createWriterPool, endPool } from '../../packages/read-path/src/database/pools.js';
import { ConnectionSteps } from '../../packages/read-path/src/database/connection-steps.js';
import { DatabaseMetrics } from '../../packages/read-path/src/metrics/database-metrics.service.js';
import { checkWriter } from '../../src/health/writer-check.js';
import { eventually } from '../harness/eventually.js';
import { newIdentity, RawClient } from '../harness/nostr-clients.js';
import { relayEnv } from '../harness/relay-fixture.js';
import { startRelay } from '../harness/relay-process.js';
import { createTestDatabase, type TestDatabase } from '../harness/test-database.js';
import { adminPool, type DatabaseLayer, metricValue, startDatabaseLayer } from '../routing/database-layer.js';
import { writerPoolOf } from '../harness/pools.js';

let db: TestDatabase;
let admin: Pool;

beforeAll(async () => {
  db = await createTestDatabase();
  admin = adminPool(db.writerUrl);
}, 30_000);

afterAll(async () => {
  await admin?.end();
  await db?.drop();
}, 30_000);

const started = (operation: string) => metricValue('buzz_db_pool_acquire_started_total', { pool_role: 'writer', operation });
const attempts = (operation: string, outcome: string) => metricValue('buzz_db_pool_acquire_attempts_total', { pool_role: 'writer', operation, outcome });
const step = (name: string, outcome: string) => metricValue('buzz_db_connection_step_attempts_total', { pool_role: 'writer', step: name, outcome });

describe('writer pairs and the cancelled outcome', () => {
  let layer: DatabaseLayer;
  beforeAll(async () => {
    layer = await startDatabaseLayer(db, { BUZZ_DB_POOL_SIZE: '1' });
  }, 30_000);
  afterAll(() => layer?.close(), 30_000);

  it('the readiness check and partition maintenance check out writer connections under their own operations', async () => {
    const [r0, m0] = [await attempts('readiness', 'success'), await attempts('maintenance', 'success')];
    expect(await layer.database.writerReachable()).toBe(true);
    expect(await checkWriter(layer.database)).toBe('success');
    expect(await layer.database.maintainPartitions('maintenance')).toEqual([]);
    expect(await attempts('readiness', 'success')).toBe(r0 + 2);
    expect(await attempts('maintenance', 'success')).toBe(m0 + 1);
  });

  it('a writer read abandoned while it waits for a connection ends as cancelled, and the connection is not lost', async () => {
    const held = await layer.database.acquireWriter('authorization');
    const abort = new AbortController();
    const s0 = await started('subscription_history');
    const [c0, ok0] = [await attempts('subscription_history', 'cancelled'), await attempts('subscription_history', 'success')];
    const read = layer.routed.clientReadOnWriter('subscription_history', async () => 'served', { signal: abort.signal });
    read.catch(() => undefined);
    await eventually('the read waits for the only writer connection', async () => (await started('subscription_history')) === s0 + 1);
    abort.abort(new Error('client went away'));
    await expect(read).rejects.toThrow('client went away');
    held.release();
    expect(await attempts('subscription_history', 'cancelled')).toBe(c0 + 1);
    expect(await attempts('subscription_history', 'success')).toBe(ok0); // one terminal outcome only
    // The connection handed over after the abort went back to the pool: the next read is served.
    expect(await layer.routed.clientReadOnWriter('subscription_history', async () => 'served')).toBe('served');
    await eventually('the pool is idle again', async () => writerPoolOf(layer.database).idleCount === 1 && writerPoolOf(layer.database).waitingCount === 0);
  });
});

describe('the spare writer connection (issue 17)', () => {
  let layer: DatabaseLayer;
  beforeAll(async () => {
    layer = await startDatabaseLayer(db, { BUZZ_DB_POOL_SIZE: '3' });
  }, 30_000);
  afterAll(() => layer?.close(), 30_000);

  /** Lets a background dial, if one was started, show in the pool's counts (pg-pool counts a dial at once). */
  const turn = () => new Promise((r) => setImmediate(r));

  it('is opened in the background when a checkout leaves none idle, is not a checkout itself, and never passes the ceiling', async () => {
    const pool = writerPoolOf(layer.database);
    await eventually('the pool holds its minimum of 2, idle', async () => pool.totalCount === 2 && pool.idleCount === 2);
    const s0 = await started('authorization');
    const first = await layer.database.acquireWriter('authorization');
    await turn();
    // One connection still idle: nothing to open.
    expect(pool.totalCount).toBe(2);
    const second = await layer.database.acquireWriter('authorization');
    // None idle and below the ceiling of 3: a third opens with no checkout waiting for it.
    await eventually('a spare connection is open and idle', async () => pool.totalCount === 3 && pool.idleCount === 1);
    expect(await started('authorization')).toBe(s0 + 2);
    // The next checkout takes the spare instead of dialling; at the ceiling, no fourth is opened.
    const third = await layer.database.acquireWriter('authorization');
    await turn();
    expect(pool.totalCount).toBe(3);
    expect(pool.idleCount).toBe(0);
    // Nor does a spare request queue for a connection behind the checkouts that are waiting for one.
    expect(pool.waitingCount).toBe(0);
    for (const c of [first, second, third]) c.release();
    await eventually('all three are idle again', async () => pool.totalCount === 3 && pool.idleCount === 3);
  });
});

describe('writer connection setup steps (database.md §6.6)', () => {
  const cfg = poolSettings(relayDatabaseOptions(loadConfig({ DATABASE_URL: 'postgres://unused@127.0.0.1/unused' })));
  const metrics = new DatabaseMetrics();
  const snapshot = async () => Object.fromEntries(await Promise.all(CONNECTION_STEPS.flatMap((s) => ['succeeded', 'failed', 'timed_out'].map(async (o) => [`${s}/${o}`, await step(s, o)] as const))));
  const delta = (before: Record<string, number>, after: Record<string, number>) =>
    Object.fromEntries(Object.entries(after).filter(([k, v]) => v !== before[k]).map(([k, v]) => [k, v - before[k]]));

  async function connectOnce(url: string): Promise<{ ok: boolean; changed: Record<string, number> }> {
    const before = await snapshot();
    const pool = createWriterPool({ ...cfg, poolSize: 1 }, url, () => undefined, new ConnectionSteps(metrics));
    const ok = await pool.connect().then(
      (c) => (c.release(), true),
      () => false,
    );
    await endPool(pool);
    return { ok, changed: delta(before, await snapshot()) };
  }

  it('a good connection records every per-connection step as succeeded', async () => {
    expect(await connectOnce(db.writerUrl)).toEqual({
      ok: true,
      changed: { 'physical_connect/succeeded': 1, 'created_at_floor/succeeded': 1, 'session_timeouts/succeeded': 1, 'isolation/succeeded': 1, 'ready/succeeded': 1 },
    });
  });

  it('a refused dial fails physical_connect and runs no hook step', async () => {
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as { port: number }).port;
    await new Promise<void>((r) => closed.close(() => r()));
    expect(await connectOnce(`postgres://buzz@127.0.0.1:${port}/nothing`)).toEqual({ ok: false, changed: { 'physical_connect/failed': 1 } });
  });

  it('a server that accepts and never answers times physical_connect out', async () => {
    const sockets: Socket[] = [];
    const silent: Server = createServer((s) => void sockets.push(s));
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    try {
      const port = (silent.address() as { port: number }).port;
      expect(await connectOnce(`postgres://buzz@127.0.0.1:${port}/nothing`)).toEqual({ ok: false, changed: { 'physical_connect/timed_out': 1 } });
    } finally {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => silent.close(() => r()));
    }
  }, 15_000);

  it('a database whose default isolation is not READ COMMITTED fails the isolation step (and ready)', async () => {
    const name = (await admin.query<{ d: string }>('select current_database() as d')).rows[0].d;
    await admin.query(`alter database "${name}" set default_transaction_isolation = 'serializable'`);
    try {
      expect(await connectOnce(db.writerUrl)).toEqual({
        ok: false,
        changed: { 'physical_connect/succeeded': 1, 'created_at_floor/succeeded': 1, 'session_timeouts/succeeded': 1, 'isolation/failed': 1, 'ready/failed': 1 },
      });
    } finally {
      await admin.query(`alter database "${name}" reset default_transaction_isolation`);
    }
  });

  it('start-up records writer_pool once; the label sets stay closed', async () => {
    const before = await step('writer_pool', 'succeeded');
    const layer = await startDatabaseLayer(db, {});
    await layer.close();
    expect(await step('writer_pool', 'succeeded')).toBe(before + 1);
    const data = await register.getSingleMetric('buzz_db_connection_step_attempts_total')!.get();
    for (const v of data.values) {
      expect(Object.keys(v.labels).sort()).toEqual(['outcome', 'pool_role', 'step']);
      expect(CONNECTION_STEPS).toContain(v.labels.step);
      expect(['succeeded', 'failed', 'timed_out', 'cancelled']).toContain(v.labels.outcome);
      expect(v.labels.pool_role).toBe('writer');
    }
  });
});

describe('the built relay', () => {
  it('records event writes as event_write and the readiness samples as readiness on the writer', async () => {
    const relay = await startRelay(relayEnv(db));
    try {
      const scrape = async () => (await fetch(relay.metricsUrl)).text();
      const value = (text: string, op: string) => Number(new RegExp(`buzz_db_pool_acquire_attempts_total\\{pool_role="writer",operation="${op}",outcome="success"\\} (\\d+)`).exec(text)?.[1] ?? 0);
      const before = await scrape();
      const c = await RawClient.authed(relay.wsUrl, newIdentity());
      const id = newIdentity();
      const author = await RawClient.authed(relay.wsUrl, id);
      expect(await author.publish(id.sign({ kind: 1, content: 'counted as event_write' }))).toEqual([true, '']);
      expect((await fetch(relay.httpUrl + '/readyz')).status).toBe(200);
      const after = await scrape();
      expect(value(after, 'event_write')).toBeGreaterThan(value(before, 'event_write'));
      // /readyz answers from the readiness sampler's last sample; the sampler checks out writer connections as `readiness`.
      await eventually('readiness samples are counted', async () => value(await scrape(), 'readiness') > value(before, 'readiness'));
      c.close();
      author.close();
    } finally {
      await relay.stop();
    }
  }, 60_000);
});

describe('session settings', () => {
  const cfg = poolSettings(relayDatabaseOptions(loadConfig({ DATABASE_URL: 'postgres://unused@127.0.0.1/unused' })));

  // JIT compiled a many-valued tag page's plan on every execution (0.52 s of 0.56 s): the
  // writer's after-connect hook and search's startup packet turn it off (the reader's proved
  // transactions: test/routing/reader-deadline.test.ts).
  it.each([
    ['writer', () => createWriterPool(cfg, db.writerUrl, () => undefined)],
    ['search', () => createSearchPool(cfg, db.readerUrl, () => undefined)],
  ])('%s sessions run without JIT, whatever the server defaults to', async (_role, create) => {
    expect((await admin.query<{ jit: string }>('show jit')).rows[0].jit).toBe('on');
    const pool = create();
    try {
      expect((await pool.query<{ jit: string }>('show jit')).rows[0].jit).toBe('off');
    } finally {
      await endPool(pool);
    }
  });
});
