/**
 * The NIP-50 search pool (database.md §2.1; issue 20) on the real pair: matching runs on its own
 * bounded pool (on the replica when one is configured, else on the writer's server), behind a
 * gate sized from that pool. A burst of searches larger than the gate is partly refused with the
 * shed-read reason and never takes a serving writer connection.
 *
 * The admitted searches are held in the database, not in a mock: an ACCESS EXCLUSIVE lock on
 * `events` taken on the writer is WAL-logged and replayed on the standby, so a search on either
 * server waits for it until the test commits.
 */
import { Pool, PoolClient } from 'pg';
import { DatabaseUnavailableError, HistoryReadRejectedError } from '../../packages/read-path/src/database/database-errors.js';
import { SEARCH_APPLICATION_NAME } from '../../packages/read-path/src/database/pools.js';
import { communityWide } from '../../src/channels/read-scope.js';
import { SearchGate } from '../../src/events/search-gate.js';
import { SearchRepository } from '../../src/events/search.repository.js';
import { SearchRequest, SearchService } from '../../src/events/search.service.js';
import { FenceProof } from '../harness/fence-proof.js';
import { createTestDatabase, faultSupport, type TestDatabase } from '../harness/test-database.js';
import { adminPool, DatabaseLayer, delta, metricValue, routeDecisions, startDatabaseLayer, waitUntil } from './database-layer.js';
import { insertRow, newCommunity } from './fixtures.js';
import { writerPoolOf } from '../harness/pools.js';

let db: TestDatabase;
let admin: Pool;
let replicaAdmin: Pool;
let community: string;
const expected: string[] = [];
const READER = 'ab'.repeat(32);
const now = () => Math.floor(Date.now() / 1000);

beforeAll(async () => {
  db = await createTestDatabase();
  admin = adminPool(db.writerUrl);
  replicaAdmin = adminPool(db.readerUrl);
  community = await newCommunity(admin);
  for (let i = 0; i < 3; i++) expected.push(await insertRow(admin, community, { createdAtSecs: now() - 100 + i, content: `quince tart number ${i}` }));
  await insertRow(admin, community, { createdAtSecs: now() - 50, content: 'plum cake' });
  await db.waitForReplica();
}, 30_000);

afterAll(async () => {
  await replicaAdmin?.end();
  await admin?.end();
  await db?.drop();
}, 30_000);

interface Harness {
  layer: DatabaseLayer;
  gate: SearchGate;
  search: SearchService;
}

async function harness(env: Record<string, string>, withReader: boolean): Promise<Harness> {
  const layer = await startDatabaseLayer(db, env, withReader);
  const gate = new SearchGate(layer.database, layer.metrics);
  return { layer, gate, search: new SearchService(new SearchRepository(), layer.routed, gate) };
}

const request = (text: string): SearchRequest => ({
  text,
  prefix: false,
  filter: { tags: {}, extensions: {}, search: text },
  limit: 100,
  offset: 0,
  path: 'req_search_hydrate',
  reader: READER,
});
const quinces = (h: Harness) => h.search.search({ ...communityWide(community), reader: READER }, request('quince'));
const writerStarted = () => metricValue('buzz_db_pool_acquire_started_total', { pool_role: 'writer' });
const searchStarted = () => metricValue('buzz_db_pool_acquire_started_total', { pool_role: 'search', operation: 'subscription_history' });
const sessions = async (pool: Pool, app: string) =>
  (await pool.query<{ n: number }>(`select count(*)::int as n from pg_stat_activity where datname = current_database() and application_name = $1`, [app])).rows[0].n;

/** Locks `events` on the writer and waits until the standby replayed the lock, so searches on either server block. */
async function lockEvents(): Promise<PoolClient> {
  const client = await admin.connect();
  client.on('error', () => undefined); // drop() terminates a session a failed test left open
  await client.query('begin');
  await client.query('lock table events in access exclusive mode');
  await waitUntil('the standby replays the events lock', async () => {
    // The lock record sits in a part-filled WAL page until something flushes it: a commit does.
    await admin.query('select pg_current_xact_id()');
    const { rows } = await replicaAdmin.query(
      `select 1 from pg_locks l join pg_class c on c.oid = l.relation where c.relname = 'events' and l.mode = 'AccessExclusiveLock' and l.granted`,
    );
    return rows.length > 0;
  });
  return client;
}

type Settled = { ok: true; ids: string[] } | { ok: false; err: unknown };

/**
 * Starts `n` searches at once while `events` is locked: `admitted` of them take the gate and wait
 * in the database, the rest wait for a place and are refused. `whileHeld` runs then; the lock is
 * released after `beforeRelease`, and the served results are returned once all settled.
 */
async function heldBurst(h: Harness, n: number, admitted: number, whileHeld: (refused: Settled[]) => Promise<void>, beforeRelease = () => {}): Promise<Settled[]> {
  const lock = await lockEvents();
  const outcomes: Settled[] = [];
  let all: Promise<unknown> = Promise.resolve();
  try {
    all = Promise.all(
      Array.from({ length: n }, () =>
        quinces(h).then(
          (rows) => outcomes.push({ ok: true, ids: rows.map((e) => e.id).sort() }),
          (err: unknown) => outcomes.push({ ok: false, err }),
        ),
      ),
    );
    await waitUntil(`${admitted} searches admitted, ${n - admitted} waiting`, () => h.gate.inUse === admitted && h.gate.waiting === n - admitted);
    await waitUntil('the waiting searches are refused', () => outcomes.length === n - admitted);
    await whileHeld([...outcomes]);
    beforeRelease();
  } finally {
    await lock.query('commit');
    lock.release();
  }
  await all;
  return outcomes.filter((o) => o.ok);
}

function expectShed(outcome: Settled): void {
  expect(outcome.ok).toBe(false);
  const err = (outcome as { err: unknown }).err;
  expect(err).toBeInstanceOf(HistoryReadRejectedError);
  expect((err as HistoryReadRejectedError).reason).toBe('history_read_cap');
  expect(err).toBeInstanceOf(DatabaseUnavailableError); // retryable on both transports
}

describe('search pool on the replica (READ_DATABASE_URL set)', () => {
  let h: Harness;
  let proof: FenceProof;
  beforeAll(async () => {
    // The widest budget, so the test's proof stays fresh while the searches are held.
    h = await harness({ BUZZ_REPLICA_READ_MAX_AGE_MS: '30000', BUZZ_DB_SEARCH_POOL_SIZE: '2' }, true);
    await h.layer.fence.waitForBeats(1);
    await h.layer.fence.stopProbe();
    proof = await FenceProof.capture(h.layer.fence, db.readerUrl);
  }, 30_000);
  afterAll(() => h?.layer.close(), 30_000);

  beforeEach(() => proof.open(Date.now() + 3600_000));

  it('matches and hydrates correctly, with search-pool acquisitions and no writer checkout', async () => {
    const [w0, s0] = [await writerStarted(), await searchStarted()];
    const rows = await quinces(h);
    expect(rows.map((e) => e.id).sort()).toEqual([...expected].sort());
    expect(rows.every((e) => e.content.startsWith('quince tart'))).toBe(true);
    expect(await writerStarted()).toBe(w0);
    expect(await searchStarted()).toBe(s0 + 1);
    expect(await metricValue('buzz_db_pool_acquire_attempts_total', { pool_role: 'search', outcome: 'success' })).toBeGreaterThanOrEqual(1);
    expect(await sessions(replicaAdmin, SEARCH_APPLICATION_NAME)).toBe(1);
    expect(await sessions(admin, SEARCH_APPLICATION_NAME)).toBe(0);
  });

  it('a burst larger than the gate: the excess is shed with history_read_cap, no writer connection is taken, the admitted searches are right', async () => {
    const [w0, s0, r0] = [await writerStarted(), await searchStarted(), await routeDecisions()];
    const writerBusy0 = writerPoolOf(h.layer.database).totalCount - writerPoolOf(h.layer.database).idleCount;
    const served = await heldBurst(
      h,
      6,
      2,
      async (refused) => {
        refused.forEach(expectShed);
        // The admitted two are waiting in the standby, on search-pool sessions; none is on the writer.
        expect(await sessions(replicaAdmin, SEARCH_APPLICATION_NAME)).toBe(2);
        expect(await sessions(admin, SEARCH_APPLICATION_NAME)).toBe(0);
        expect(await writerStarted()).toBe(w0);
        expect(writerPoolOf(h.layer.database).totalCount - writerPoolOf(h.layer.database).idleCount).toBe(writerBusy0);
        h.layer.fence.sample();
        expect(await metricValue('buzz_db_pool_connections', { pool_role: 'search', state: 'active' })).toBe(2);
        expect(await metricValue('buzz_db_pool_max_connections', { pool_role: 'search' })).toBe(2);
        expect(await metricValue('buzz_db_pool_configured', { pool_role: 'search' })).toBe(1);
      },
      () => proof.open(Date.now() + 3600_000),
    );
    expect(served).toEqual([
      { ok: true, ids: [...expected].sort() },
      { ok: true, ids: [...expected].sort() },
    ]);
    expect(await writerStarted()).toBe(w0);
    expect(await searchStarted()).toBe(s0 + 2);
    expect(delta(r0, await routeDecisions())).toEqual({ 'req_search_hydrate/rejected/history_read_cap': 4, 'req_search_hydrate/replica/fresh': 2 });
    expect(h.gate.inUse).toBe(0);
  }, 30_000);
});

describe('search pool without a replica (READ_DATABASE_URL unset)', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await harness({ BUZZ_DB_SEARCH_POOL_SIZE: '1' }, false);
  }, 30_000);
  afterAll(() => h?.layer.close(), 30_000);

  it('its own bounded pool on the writer server: the burst is shed, the serving writer pool is not touched by matching', async () => {
    const w0 = await writerStarted();
    const served = await heldBurst(h, 3, 1, async (refused) => {
      refused.forEach(expectShed);
      // The one admitted search waits on the writer server, on a search-pool session, not a writer-pool one.
      expect(await sessions(admin, SEARCH_APPLICATION_NAME)).toBe(1);
      expect(await writerStarted()).toBe(w0);
    });
    expect(served).toEqual([{ ok: true, ids: [...expected].sort() }]);
    // Hydration has no replica to go to: it is the only writer checkout, one per served search.
    expect(await writerStarted()).toBe(w0 + 1);
  }, 30_000);

  it('search sessions are read-only and carry the client-read deadline', async () => {
    const client = await h.layer.database.acquireSearch();
    try {
      await expect(client.query(`insert into communities (host) values ('never.example')`)).rejects.toMatchObject({ code: '25006' });
      expect((await client.query<{ ro: string }>(`select current_setting('default_transaction_read_only') as ro`)).rows[0].ro).toBe('on');
      expect((await client.query<{ t: string }>(`select current_setting('statement_timeout') as t`)).rows[0].t).toBe('20s'); // BUZZ_DB_CLIENT_READ_TIMEOUT_MS
    } finally {
      client.release();
    }
  });
});

const maybe = faultSupport().supported ? describe : describe.skip;

// Last in the file: it deletes one of the fixture rows.
maybe('search pool under replica faults (the real probe, docs/read-routing.md "Search matching is unfenced")', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await harness({ BUZZ_REPLICA_READ_MAX_AGE_MS: '2000', BUZZ_DB_SEARCH_POOL_SIZE: '2' }, true);
    await h.layer.fence.waitForBeats(1);
  }, 30_000);
  afterAll(async () => {
    await db.cluster.heal();
    await h?.layer.close();
  }, 30_000);

  it('replica stopped: searches fail retryably and do not move to the writer', async () => {
    await quinces(h); // a pooled search connection, which the stop terminates
    const w0 = await writerStarted();
    await db.cluster.stopReplica();
    try {
      for (let i = 0; i < 2; i++) {
        const err = await quinces(h).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(err).toBeInstanceOf(DatabaseUnavailableError);
      }
      expect(await writerStarted()).toBe(w0);
    } finally {
      await db.cluster.startReplica();
      await db.waitForReplica(20_000);
    }
    await waitUntil('searches are served again once the replica is back', () => quinces(h).then(() => true, () => false), 20_000, 200);
  }, 60_000);

  it('replay paused: the match is stale, but a row deleted on the writer is not shown once the fence no longer proves the replica', async () => {
    await db.cluster.pauseReplay();
    const [gone, ...kept] = expected;
    await admin.query(`update events set deleted_at = now() where id = $1`, [Buffer.from(gone, 'hex')]);
    const added = await insertRow(admin, community, { createdAtSecs: now(), content: 'quince jelly' });
    const ids = async () => (await quinces(h)).map((e) => e.id).sort();
    // Within the read budget the replica's page may still be served (bounded staleness); past it
    // the hydration moves to the writer, which drops the deleted hit. The match itself still comes
    // from the paused replica, so the new row is not found yet.
    await waitUntil('hydration no longer shows the deleted row', async () => !(await ids()).includes(gone), 20_000, 200);
    expect(await ids()).toEqual([...kept].sort());
    await db.cluster.resumeReplay();
    await db.waitForReplica();
    await waitUntil('the replica catches up and the new row is matched', async () => (await ids()).includes(added), 20_000, 200);
    expect(await ids()).toEqual([...kept, added].sort());
  }, 60_000);
});
