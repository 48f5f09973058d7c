/**
 * RoutedReader on the real pair (database.md §2.4–§2.8, §8.2; seed 001 spill causes). The
 * probe loop is stopped after one beat and the fence is opened here with a proof the replica has
 * shown (test/harness/fence-proof.ts) at the wall each case needs; the probe itself is exercised
 * in test/replica-fence and the fault tests.
 */
import { performance } from 'node:perf_hooks';
import { sql } from 'kysely';
import { Pool } from 'pg';
import { BOUNDED, ChannelScope, fromChannelCursor } from '../../packages/read-path/src/routing/route-predicate.js';
import { FenceProof } from '../harness/fence-proof.js';
import { createTestDatabase, type TestDatabase } from '../harness/test-database.js';
import { adminPool, DatabaseLayer, delta, metricValue, routeDecisions, spills, startDatabaseLayer, waitUntil } from './database-layer.js';
import { channelPage, countRows, insertRow, newCommunity, randomUUID } from './fixtures.js';
import { readerPoolOf } from '../harness/pools.js';

let db: TestDatabase;
let admin: Pool;
let replicaAdmin: Pool;
let layer: DatabaseLayer;
let proof: FenceProof;
let community: string;
const now = () => Math.floor(Date.now() / 1000);
const FAR_WALL = Date.now() + 3600_000;

beforeAll(async () => {
  db = await createTestDatabase();
  admin = adminPool(db.writerUrl);
  replicaAdmin = adminPool(db.readerUrl);
  community = await newCommunity(admin);
  await insertRow(admin, community, { createdAtSecs: now() - 100, content: 'shared' });
  await db.waitForReplica();
  layer = await startDatabaseLayer(db, { BUZZ_REPLICA_READ_MAX_AGE_MS: '2000' });
  await layer.fence.waitForBeats(1);
  await layer.fence.stopProbe();
  proof = await FenceProof.capture(layer.fence, db.readerUrl);
}, 30_000);

afterAll(async () => {
  await layer?.close();
  await replicaAdmin?.end();
  await admin?.end();
  await db?.drop();
}, 30_000);

/** Which server served the read: the standby answers pg_is_in_recovery() = true. */
const served = (path: 'req_historical' | 'count_req' | 'bridge_query' = 'req_historical', predicate = BOUNDED) =>
  layer.routed.read({ path, predicate }, async (d) => {
    const { rows } = await sql<{ standby: boolean }>`select pg_is_in_recovery() as standby`.execute(d);
    return rows[0].standby ? 'replica' : 'writer';
  });

async function observe<T>(fn: () => Promise<T>): Promise<{ result: T; routes: Record<string, number>; spilled: Record<string, number> }> {
  const [r0, s0] = [await routeDecisions(), await spills()];
  const result = await fn();
  return { result, routes: delta(r0, await routeDecisions()), spilled: delta(s0, await spills()) };
}

describe('reader_spills_are_counted_by_cause (seed 001)', () => {
  it('fresh heartbeat: replica, no spill', async () => {
    proof.open(FAR_WALL);
    const o = await observe(() => served());
    expect(o.result).toBe('replica');
    expect(o.routes).toEqual({ 'req_historical/replica/fresh': 1 });
    expect(o.spilled).toEqual({});
  });

  it('late heartbeat: heartbeat_stale, with the legacy writer/stale', async () => {
    proof.open(FAR_WALL, performance.now() - 3000);
    const o = await observe(() => served());
    expect(o.result).toBe('writer');
    expect(o.routes).toEqual({ 'req_historical/writer/stale': 1 });
    expect(o.spilled).toEqual({ 'req_historical/heartbeat_stale': 1 });
  });

  it('past the staleness gate: heartbeat_missing with writer/uninitialized', async () => {
    proof.open(FAR_WALL, performance.now() - 31_000);
    const o = await observe(() => served());
    expect(o.result).toBe('writer');
    expect(o.routes).toEqual({ 'req_historical/writer/uninitialized': 1 });
    expect(o.spilled).toEqual({ 'req_historical/heartbeat_missing': 1 });
  });

  it('covered read above the wall: fence_wall_behind', async () => {
    proof.open((now() - 2000) * 1000);
    const o = await observe(() => served('req_historical', fromChannelCursor(randomUUID(), now() - 1000)));
    expect(o.result).toBe('writer');
    expect(o.routes).toEqual({ 'req_historical/writer/stale': 1 });
    expect(o.spilled).toEqual({ 'req_historical/fence_wall_behind': 1 });
  });

  it('epoch mismatch: reader_validation_error', async () => {
    layer.fence.ring.close();
    layer.fence.ring.record(1n << 40n, '00000000-0000-4000-8000-00000000dead', performance.now(), FAR_WALL);
    const o = await observe(() => served());
    expect(o.result).toBe('writer');
    expect(o.routes).toEqual({ 'req_historical/writer/reader_validation_error': 1 });
    expect(o.spilled).toEqual({ 'req_historical/reader_validation_error': 1 });
  });

  it('observed token below every retained entry: reader_token_behind', async () => {
    const { rows } = await replicaAdmin.query<{ token: string; epoch: string }>('select token::text, epoch::text from replica_heartbeat');
    layer.fence.ring.close();
    layer.fence.ring.record(BigInt(rows[0].token) + 1_000n, rows[0].epoch, performance.now(), FAR_WALL);
    const o = await observe(() => served());
    expect(o.result).toBe('writer');
    expect(o.routes).toEqual({ 'req_historical/writer/reader_token_behind': 1 });
    expect(o.spilled).toEqual({ 'req_historical/reader_token_behind': 1 });
  });

  it('routing disabled (budget 0): writer/disabled, no spill; no reader: writer/disabled', async () => {
    for (const [env, withReader] of [[{ BUZZ_REPLICA_READ_MAX_AGE_MS: '0' }, true], [{ BUZZ_REPLICA_READ_MAX_AGE_MS: '2000' }, false]] as const) {
      const dark = await startDatabaseLayer(db, env, withReader);
      try {
        if (withReader) (await FenceProof.capture(dark.fence, db.readerUrl)).open(FAR_WALL);
        const [r0, s0] = [await routeDecisions(), await spills()];
        const where = await dark.routed.read({ path: 'count_req', predicate: BOUNDED }, async (d) => (await sql<{ s: boolean }>`select pg_is_in_recovery() as s`.execute(d)).rows[0].s);
        expect(where).toBe(false);
        expect(delta(r0, await routeDecisions())).toEqual({ 'count_req/writer/disabled': 1 });
        expect(delta(s0, await spills())).toEqual({});
      } finally {
        await dark.close();
      }
    }
  });
});

describe('predicates on divergent fixtures', () => {
  const channel = randomUUID();
  let t0: number;

  beforeAll(async () => {
    t0 = now() - 3000;
    await insertRow(admin, community, { channelId: channel, createdAtSecs: t0, content: 'm1' });
    await insertRow(admin, community, { channelId: channel, createdAtSecs: t0 + 20, content: 'm3' });
    await db.waitForReplica();
    await db.cluster.pauseReplay();
    // m2 commits late (older created_at than m3) and exists only on the writer while replay is paused.
    await insertRow(admin, community, { channelId: channel, createdAtSecs: t0 + 10, content: 'm2' });
  }, 30_000);
  afterAll(async () => {
    await db.cluster.resumeReplay();
    await db.waitForReplica();
  }, 30_000);

  const cursorPage = () =>
    layer.routed.read({ path: 'req_historical', predicate: fromChannelCursor(channel, t0 + 30) }, (d) => channelPage(d, community, channel, t0 + 30));

  it('channel_cursor_above_fence_stays_on_writer_preventing_middle_hole', async () => {
    layer.fence.ring.close();
    expect(await cursorPage()).toEqual(['m3', 'm2', 'm1']); // closed fence → writer
    proof.open((t0 + 15) * 1000); // wall below the cursor → writer
    expect(await cursorPage()).toEqual(['m3', 'm2', 'm1']);
    proof.open((t0 + 30) * 1000); // counterfactual over-open fence: the replica skips m2
    expect(await cursorPage()).toEqual(['m3', 'm1']);
  });

  it('head pages route by the budget: fresh entry → replica, old entry → writer', async () => {
    const head = () => layer.routed.read({ path: 'req_historical', predicate: fromChannelCursor(channel, undefined) }, (d) => channelPage(d, community, channel, now()));
    proof.open(FAR_WALL);
    expect(await head()).toEqual(['m3', 'm1']);
    proof.open(FAR_WALL, performance.now() - 10_000);
    expect(await head()).toEqual(['m3', 'm2', 'm1']);
  });

  it('thread forward pages are post-verified: a short page or a tail above the wall re-runs on the writer (thread_eof)', async () => {
    const predicate = { kind: 'covered_post_verified', proof: ChannelScope.threadJoin() } as const;
    const forward = (limit: number) =>
      layer.routed.read(
        { path: 'bridge_thread_aux', predicate },
        async (d) => {
          const { rows } = await sql<{ content: string; at: number }>`
            select content, extract(epoch from created_at)::int as at from events
             where community_id = ${community}::uuid and channel_id = ${channel}::uuid and created_at >= to_timestamp(${t0})
             order by created_at asc, id asc limit ${limit}`.execute(d);
          return rows;
        },
        (rows, entry) => rows.length >= limit && rows[rows.length - 1].at * 1000 <= entry.fenceWall,
      );
    const contents = (rows: { content: string }[]) => rows.map((r) => r.content);
    proof.open((t0 + 30) * 1000);
    let o = await observe(() => forward(2));
    expect(contents(o.result)).toEqual(['m1', 'm3']); // full page under the (counterfactual) wall: replica
    expect(o.routes).toEqual({ 'bridge_thread_aux/replica/covered': 1 });
    proof.open((t0 + 15) * 1000);
    o = await observe(() => forward(2));
    expect(contents(o.result)).toEqual(['m1', 'm2']); // tail above the wall: writer
    expect(o.routes).toEqual({ 'thread_eof/writer/stale': 1 });
    proof.open((t0 + 30) * 1000);
    o = await observe(() => forward(5));
    expect(contents(o.result)).toEqual(['m1', 'm2', 'm3']); // candidate EOF: writer
    expect(o.routes).toEqual({ 'thread_eof/writer/stale': 1 });
  });

  it('read-your-writes: an author with a write after the proved entry reads on the writer', async () => {
    const author = { communityId: community, pubkey: 'a'.repeat(64) };
    proof.open(FAR_WALL);
    layer.routed.noteWrite(author);
    const read = (who?: typeof author) =>
      layer.routed.read({ path: 'req_historical', predicate: BOUNDED, author: who }, (d) => channelPage(d, community, channel, now()));
    const own = await observe(() => read(author));
    expect(own.result).toEqual(['m3', 'm2', 'm1']);
    // A fresh beat that predates the author's write is not probe lateness (issue 20).
    expect(own.spilled).toEqual({ 'req_historical/fence_wall_behind': 1 });
    expect(own.routes).toEqual({ 'req_historical/writer/stale': 1 });
    expect(await read()).toEqual(['m3', 'm1']); // someone else: bounded staleness allowed
    proof.open(FAR_WALL); // an entry taken after the write proves it
    expect(await read(author)).toEqual(['m3', 'm1']);
  });
});

describe('when a read says its snapshot is fixed (RouteRequest.onSnapshot, the relay\'s single flight)', () => {
  /** A read that records, in order, the hook's call and its work's start, and where the work ran. */
  async function hooked(predicate = BOUNDED) {
    const steps: string[] = [];
    let stillShared: (() => boolean) | undefined;
    const onSnapshot = (shared?: () => boolean) => {
      stillShared = shared;
      steps.push(shared === undefined ? 'snapshot' : 'proved snapshot');
    };
    const where = await layer.routed.read({ path: 'req_historical', predicate, onSnapshot }, async (d) => {
      steps.push('work');
      const { rows } = await sql<{ standby: boolean }>`select pg_is_in_recovery() as standby`.execute(d);
      return rows[0].standby ? 'replica' : 'writer';
    });
    return { where, steps, stillShared };
  }

  it('a bounded replica read: after the proof, before the work; shared while the proof is within the budget', async () => {
    proof.open(FAR_WALL, performance.now() - 1800); // 200 ms left of the 2 s budget
    const r = await hooked();
    expect(r.where).toBe('replica');
    expect(r.steps).toEqual(['proved snapshot', 'work']);
    expect(r.stillShared?.()).toBe(true);
    await waitUntil('the proof past the budget', () => r.stillShared?.() === false, 5000);
  });

  it('a covered replica read: shared for as long as it runs, whatever the proof\'s age', async () => {
    proof.open(FAR_WALL, performance.now() - 10_000);
    const r = await hooked(fromChannelCursor(randomUUID(), now() - 1000));
    expect(r.where).toBe('replica');
    expect(r.stillShared?.()).toBe(true);
  });

  it('a writer read: as its work starts, and never shared after', async () => {
    proof.open(FAR_WALL, performance.now() - 3000); // older than the budget: the writer serves
    const r = await hooked();
    expect(r.where).toBe('writer');
    expect(r.steps).toEqual(['snapshot', 'work']);
    expect(r.stillShared).toBeUndefined();
  });
});

describe('serving, fallback and sessions', () => {
  beforeAll(() => proof.open(FAR_WALL));

  it('a replica query error re-runs on the writer (writer/replica_error)', async () => {
    const o = await observe(() =>
      layer.routed.read({ path: 'bridge_query', predicate: BOUNDED }, async (d) => {
        // txid_current() cannot run during recovery: a genuine replica-only failure.
        const { rows } = await sql<{ x: string }>`select txid_current()::text as x`.execute(d);
        return rows[0].x;
      }),
    );
    expect(o.result).toMatch(/^\d+$/);
    expect(o.routes).toEqual({ 'bridge_query/writer/replica_error': 1 });
  });

  it('a replica statement timeout (57014) is surfaced and never re-run on the writer', async () => {
    let runs = 0;
    const [r0] = [await routeDecisions()];
    const err = await layer.routed
      .read({ path: 'bridge_query', predicate: BOUNDED }, async (d) => {
        runs += 1;
        await sql`select set_config('statement_timeout', '50', true)`.execute(d);
        await sql`select pg_sleep(2)`.execute(d);
      })
      .catch((e: unknown) => e);
    expect((err as { code?: string }).code).toBe('57014');
    expect(runs).toBe(1);
    expect(delta(r0, await routeDecisions())).toEqual({ 'bridge_query/replica/statement_cancelled': 1 });
  });

  it('every reader transaction is bounded by a tighten-only 20 s statement deadline', async () => {
    const setting = await layer.routed.read({ path: 'bridge_query', predicate: BOUNDED }, async (d) => {
      const { rows } = await sql<{ s: string; ro: string; iso: string }>`
        select current_setting('statement_timeout') as s, current_setting('transaction_read_only') as ro,
               current_setting('transaction_isolation') as iso`.execute(d);
      return rows[0];
    });
    expect(setting).toEqual({ s: '20s', ro: 'on', iso: 'repeatable read' });
  });

  it('a read whose statements are all GENERIC_PLAN plans them generically in its transaction, and only there', async () => {
    const mode = async (genericPlan?: boolean) => {
      const row = await layer.routed.read({ path: 'req_historical', predicate: BOUNDED, genericPlan }, async (d) => {
        const { rows } = await sql<{ mode: string; standby: boolean; pid: number }>`
          select current_setting('plan_cache_mode') as mode, pg_is_in_recovery() as standby, pg_backend_pid() as pid`.execute(d);
        return rows[0];
      });
      // The connection returns to the pool after its ROLLBACK: wait for it, so the next read takes it again.
      const pool = readerPoolOf(layer.database);
      await waitUntil('the reader connection back in the pool', () => pool.idleCount === pool.totalCount, 5000);
      return row;
    };
    const first = await mode(true);
    expect(first).toMatchObject({ mode: 'force_generic_plan', standby: true });
    // The setting ends with the transaction: the next reads on the same connection have the server's mode.
    expect(await mode()).toEqual({ ...first, mode: 'auto' });
    expect(await mode(false)).toEqual({ ...first, mode: 'auto' });
  });

  it('each reader connection prepares the proof once and executes it for every proof after', async () => {
    const proofs = async () =>
      layer.routed.read({ path: 'req_historical', predicate: BOUNDED }, async (d) => {
        const { rows } = await sql<{ name: string; runs: number; standby: boolean }>`
          select name, (generic_plans + custom_plans)::int as runs, pg_is_in_recovery() as standby
            from pg_prepared_statements where name like 'buzz_proof%'`.execute(d);
        return rows;
      });
    const before = await proofs();
    expect(before).toEqual([{ name: 'buzz_proof', runs: expect.any(Number), standby: true }]);
    const pool = readerPoolOf(layer.database);
    await waitUntil('the reader connection back in the pool', () => pool.idleCount === pool.totalCount, 5000);
    expect(await proofs()).toEqual([{ ...before[0], runs: before[0].runs + 1 }]);
  });

  it('routed_request_holds_one_snapshot_across_page_and_aux', async () => {
    const { page, session } = await layer.routed.session({ path: 'bridge_query', predicate: BOUNDED }, (d) => countRows(d, community));
    try {
      expect(session.isReplica()).toBe(true);
      await insertRow(admin, community, { createdAtSecs: now() - 50, content: 'after-proof' });
      await db.waitForReplica();
      expect(await session.run((d) => countRows(d, community))).toBe(page);
      const fresh = await layer.routed.read({ path: 'bridge_query', predicate: BOUNDED }, (d) => countRows(d, community));
      expect(fresh).toBe(page + 1);
    } finally {
      session.release();
    }
  });

  it('read_session_degrades_to_writer_when_replica_connection_dies', async () => {
    const { session } = await layer.routed.session({ path: 'bridge_query', predicate: BOUNDED }, (d) => countRows(d, community));
    try {
      expect(session.isReplica()).toBe(true);
      const degraded0 = await metricValue('buzz_db_read_session_degraded');
      const { rows } = await replicaAdmin.query<{ pid: number }>(
        `select pid from pg_stat_activity where application_name = 'buzz-relay-reader' and state = 'idle in transaction' and datname = current_database()`,
      );
      expect(rows).toHaveLength(1);
      await replicaAdmin.query('select pg_terminate_backend($1)', [rows[0].pid]);
      // Wait until the backend is gone: its FATAL reaches the checked-out client between statements,
      // which must neither crash the process (unhandled 'error') nor fail the request.
      await waitUntil('terminated reader backend to exit', async () =>
        (await replicaAdmin.query('select 1 from pg_stat_activity where pid = $1', [rows[0].pid])).rowCount === 0,
      );
      await new Promise((r) => setImmediate(r));
      const where = await session.run(async (d) => (await sql<{ s: boolean }>`select pg_is_in_recovery() as s`.execute(d)).rows[0].s);
      expect(where).toBe(false);
      expect(session.isReplica()).toBe(false);
      expect(await metricValue('buzz_db_read_session_degraded')).toBe(degraded0 + 1);
    } finally {
      session.release();
    }
  });

  it('records exactly one decision per request and never the retired pool_busy', async () => {
    const o = await observe(async () => {
      for (let i = 0; i < 5; i++) await served('count_req');
    });
    expect(Object.values(o.routes).reduce((a, b) => a + b, 0)).toBe(5);
    expect(Object.keys(await routeDecisions()).some((k) => k.includes('pool_busy'))).toBe(false);
  });

  it('reader acquisitions emit the new and the legacy families, with operation', async () => {
    const started = await metricValue('buzz_db_pool_acquire_started_total', { pool_role: 'reader', operation: 'subscription_history' });
    const legacy = await metricValue('buzz_db_pool_acquisitions_total', { pool_role: 'reader', operation: 'subscription_history', outcome: 'success' });
    await served();
    expect(await metricValue('buzz_db_pool_acquire_started_total', { pool_role: 'reader', operation: 'subscription_history' })).toBe(started + 1);
    expect(await metricValue('buzz_db_pool_acquisitions_total', { pool_role: 'reader', operation: 'subscription_history', outcome: 'success' })).toBe(legacy + 1);
  });

  it('publishes the fence gauges', async () => {
    proof.open((now() - 1000) * 1000);
    layer.fence.sample();
    expect(await metricValue('buzz_db_replica_fence_open')).toBe(1);
    await waitUntil('lag gauge', async () => (await metricValue('buzz_db_replica_fence_lag_seconds')) >= 1000);
  });
});
