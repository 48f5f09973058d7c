/**
 * History-read admission on the real pair (seed 000; database.md §3, §8.2): a saturated reader
 * sheds history reads instead of spilling them onto the writer, the per-pod gate's permit lives
 * and dies with the reader transaction, and reads that never reach the reader (match-nothing,
 * pre-checks, an unreachable reader) are untouched. The fence is held open with a proof the
 * replica has shown (test/harness/fence-proof.ts).
 */
import { performance } from 'node:perf_hooks';
import { sql, type Kysely } from 'kysely';
import { Pool, type PoolClient } from 'pg';
import type { DB } from '../../packages/read-path/src/database/database.types.js';
import type { NostrFilter } from '../../src/nostr/nostr.types.js';
import { communityWide } from '../../src/channels/read-scope.js';
import { EventQueryService } from '../../src/events/event-query.service.js';
import { EventReadRepository } from '../../src/events/event-read.repository.js';
import { HISTORY_PERMIT_WAIT_MS, HistoryReadGate } from '../../packages/read-path/src/history-reads/history-read-gate.js';
import type { RoutePath } from '../../packages/read-path/src/metrics/database-metrics.service.js';
import { BOUNDED } from '../../packages/read-path/src/routing/route-predicate.js';
import { HistoryReadRejectedError } from '../../packages/read-path/src/database/database-errors.js';
import type { ReaderOperation } from '../../packages/read-path/src/routing/routed-read.types.js';
import { FenceProof } from '../harness/fence-proof.js';
import { createTestDatabase, faultSupport, type TestDatabase } from '../harness/test-database.js';
import { adminPool, type DatabaseLayer, delta, metricValue, routeDecisions, spills, startDatabaseLayer, waitUntil } from '../routing/database-layer.js';
import { newCommunity } from '../routing/fixtures.js';
import { readerPoolOf, readerSaturated } from '../harness/pools.js';

let db: TestDatabase;
let admin: Pool;
const FAR_WALL = Date.now() + 3600_000;
const faults = faultSupport();

beforeAll(async () => {
  db = await createTestDatabase();
  admin = adminPool(db.writerUrl);
}, 30_000);

afterAll(async () => {
  await admin?.end();
  await db?.drop();
}, 30_000);

/** A database layer whose fence the test holds open (probe stopped), with the proof to renew it. */
type OpenLayer = DatabaseLayer & { readonly proof: FenceProof };

async function layerWith(readPoolSize: number): Promise<OpenLayer> {
  const layer = await startDatabaseLayer(db, { BUZZ_REPLICA_READ_MAX_AGE_MS: '2000', BUZZ_DB_POOL_SIZE: '4', BUZZ_DB_READ_POOL_SIZE: String(readPoolSize) });
  await layer.fence.waitForBeats(1);
  await layer.fence.stopProbe();
  const proof = await FenceProof.capture(layer.fence, db.readerUrl);
  proof.open(FAR_WALL);
  return { ...layer, proof };
}

const where = async (d: Kysely<DB>) => ((await sql<{ s: boolean }>`select pg_is_in_recovery() as s`.execute(d)).rows[0].s ? 'replica' : 'writer');

function routedWhere(layer: DatabaseLayer, path: RoutePath, operation: ReaderOperation = 'subscription_history') {
  return layer.routed.read({ path, predicate: BOUNDED, operation }, where);
}

async function observe<T>(fn: () => Promise<T>) {
  const [r0, s0] = [await routeDecisions(), await spills()];
  const started = performance.now();
  const result = await fn().then(
    (value) => ({ value, error: undefined as unknown }),
    (error: unknown) => ({ value: undefined, error }),
  );
  return { ...result, ms: performance.now() - started, routes: delta(r0, await routeDecisions()), spilled: delta(s0, await spills()) };
}

describe('saturated reader', () => {
  let layer: OpenLayer;
  let held: PoolClient | undefined;
  beforeAll(async () => {
    layer = await layerWith(1);
  }, 30_000);
  afterAll(async () => {
    held?.release();
    await layer?.close();
  }, 30_000);

  it('saturated_reader_spends_one_acquire_budget_and_rejects_history_reads', async () => {
    // A size-1 reader held saturated by a non-history checkout (the gate stays empty), with the
    // Aurora-identity cache still cold (this layer never proved a session).
    held = await readerPoolOf(layer.database).connect();
    expect(readerSaturated(layer.database)).toBe(true);
    const gate = layer.app.get(HistoryReadGate);

    const history = await observe(() =>
      layer.routed.read({ path: 'count_req', predicate: BOUNDED, span: 'count_events_routed' }, async (d) => {
        const { rows } = await sql<{ n: number }>`select count(*)::int as n from events`.execute(d);
        return rows[0].n;
      }),
    );
    expect(history.error).toBeInstanceOf(HistoryReadRejectedError);
    expect((history.error as HistoryReadRejectedError).reason).toBe('reader_acquire_timeout');
    expect(history.ms).toBeLessThan(250); // one 150 ms acquire budget, not two
    expect(history.routes).toEqual({ 'count_req/rejected/reader_acquire_timeout': 1 });
    expect(history.spilled).toEqual({}); // a rejection is not a spill
    expect(gate.inUse).toBe(0); // the permit went back with the failed acquire

    const authz = await observe(() => routedWhere(layer, 'relay_membership', 'authorization'));
    expect(authz.value).toBe('writer');
    expect(authz.routes).toEqual({ 'relay_membership/writer/reader_acquire_timeout': 1 });
    expect(authz.spilled).toEqual({ 'relay_membership/reader_acquire_timeout': 1 });
    const all = [...(await routeDecisions()).keys()];
    expect(all.some((k) => k.endsWith('/reader_validation_error') && k.startsWith('count_req'))).toBe(false);
    expect(all.some((k) => k.includes('pool_busy'))).toBe(false);

    held.release();
    held = undefined;
    expect((await observe(() => routedWhere(layer, 'count_req'))).value).toBe('replica');
  });
});

describe('the gate', () => {
  let layer: OpenLayer;
  let gate: HistoryReadGate;
  beforeAll(async () => {
    layer = await layerWith(2); // cap 1: the second connection stays free for authorization reads
    gate = layer.app.get(HistoryReadGate);
  }, 30_000);
  afterAll(() => layer?.close(), 30_000);

  it('history_permit_follows_the_read_session_and_a_full_gate_rejects', async () => {
    expect(gate.capacity).toBe(1);
    const { page, session } = await layer.routed.session({ path: 'channel_cursor', predicate: BOUNDED }, where);
    try {
      expect(page).toBe('replica');
      expect(session.isReplica()).toBe(true);
      expect(gate.inUse).toBe(1); // the held replica session keeps its permit through the aux closure
      expect(await session.run(where)).toBe('replica');
      expect(gate.inUse).toBe(1);

      const shed = await observe(() => routedWhere(layer, 'bridge_query'));
      expect(shed.error).toBeInstanceOf(HistoryReadRejectedError);
      expect((shed.error as HistoryReadRejectedError).reason).toBe('history_read_cap');
      expect(shed.ms).toBeGreaterThanOrEqual(HISTORY_PERMIT_WAIT_MS - 20);
      expect(shed.ms).toBeLessThan(HISTORY_PERMIT_WAIT_MS + 500);
      expect(shed.routes).toEqual({ 'bridge_query/rejected/history_read_cap': 1 }); // no writer route recorded
      expect(shed.spilled).toEqual({});

      // Authorization reads take no permit: the reserved connection still serves them.
      expect((await observe(() => routedWhere(layer, 'relay_membership', 'authorization'))).value).toBe('replica');
    } finally {
      session.release();
    }
    expect(gate.inUse).toBe(0);
    const next = await observe(() => routedWhere(layer, 'bridge_query'));
    expect(next.value).toBe('replica');
    expect(next.routes).toEqual({ 'bridge_query/replica/fresh': 1 });
  });

  it('a per-call replica read holds the permit while it runs and drops it before a writer re-run', async () => {
    const seen: Array<[string, number]> = [];
    const result = await layer.routed.read({ path: 'bridge_query', predicate: BOUNDED }, async (d) => {
      const server = await where(d);
      seen.push([server, gate.inUse]);
      // txid_current() cannot run during recovery: a genuine replica-only failure, re-run on the writer.
      return (await sql<{ x: string }>`select txid_current()::text as x`.execute(d)).rows[0].x;
    });
    expect(result).toMatch(/^\d+$/);
    expect(seen).toEqual([
      ['replica', 1],
      ['writer', 0],
    ]);
    expect(gate.inUse).toBe(0);
  });

  it('a degraded ReadSession gives its permit back with its transaction', async () => {
    const { session } = await layer.routed.session({ path: 'bridge_query', predicate: BOUNDED }, where);
    try {
      expect(gate.inUse).toBe(1);
      const x = await session.run(async (d) => (await sql<{ x: string }>`select txid_current()::text as x`.execute(d)).rows[0].x);
      expect(x).toMatch(/^\d+$/);
      expect(session.isReplica()).toBe(false);
      expect(gate.inUse).toBe(0);
    } finally {
      session.release();
    }
  });

  it('writer-bound reads never wait on a full gate: pre-checks and the stale re-evaluation', async () => {
    const permit = await gate.acquire();
    try {
      layer.proof.open(FAR_WALL, performance.now() - 5000); // newest entry older than B
      const stale = await observe(() => routedWhere(layer, 'req_historical'));
      expect(stale.value).toBe('writer');
      expect(stale.ms).toBeLessThan(HISTORY_PERMIT_WAIT_MS / 2);
      expect(stale.routes).toEqual({ 'req_historical/writer/stale': 1 });
    } finally {
      permit?.release();
      layer.proof.open(FAR_WALL);
    }
  });
});

describe('heavy history reads', () => {
  let layer: OpenLayer;
  let gate: HistoryReadGate;
  beforeAll(async () => {
    layer = await layerWith(5); // cap 4, of which one heavy place (a quarter)
    gate = layer.app.get(HistoryReadGate);
  }, 30_000);
  afterAll(() => layer?.close(), 30_000);

  const heavyRead = (tenant: string, work: (d: Kysely<DB>) => Promise<string>) => layer.routed.read({ path: 'count_req', predicate: BOUNDED, tenant, heavy: true }, work);

  it('past its heavy places a heavy read is shed as history_read_cap while light reads are served from the replica', async () => {
    expect([gate.capacity, gate.heavy.capacity]).toEqual([4, 1]);
    let finish!: () => void;
    const running = new Promise<void>((resolve) => (finish = resolve));
    let started!: () => void;
    const holding = new Promise<void>((resolve) => (started = resolve));
    const first = heavyRead('key-a', async (d) => {
      started();
      await running;
      return where(d);
    });
    await holding;
    const refusals0 = await metricValue('buzz_db_read_share_refusals_total', { gate: 'history_heavy_reads', reason: 'capacity' });

    const second = await observe(() => heavyRead('key-b', where));
    expect(second.error).toBeInstanceOf(HistoryReadRejectedError);
    expect((second.error as HistoryReadRejectedError).reason).toBe('history_read_cap');
    expect(second.routes).toEqual({ 'count_req/rejected/history_read_cap': 1 });
    expect(second.spilled).toEqual({}); // shed, never sent to the writer
    expect(await metricValue('buzz_db_read_share_refusals_total', { gate: 'history_heavy_reads', reason: 'capacity' })).toBe(refusals0 + 1);
    const light = await observe(() => routedWhere(layer, 'req_historical'));
    expect(light.value).toBe('replica');
    expect(light.routes).toEqual({ 'req_historical/replica/fresh': 1 });

    finish();
    expect(await first).toBe('replica');
    expect([gate.inUse, gate.heavy.inUse]).toEqual([0, 0]);
    expect(await heavyRead('key-b', where)).toBe('replica');
  });
});

describe('match_nothing_reads_take_no_connection', () => {
  let layer: OpenLayer;
  let query: EventQueryService;
  let community: string;
  beforeAll(async () => {
    layer = await layerWith(1);
    query = new EventQueryService(layer.routed, new EventReadRepository());
    community = await newCommunity(admin);
    await db.waitForReplica();
  }, 30_000);
  afterAll(() => layer?.close(), 30_000);
  afterEach(async () => {
    if (faults.supported) await db.cluster.heal();
  }, 30_000);

  it('filters that match nothing (an empty kinds, ids, authors or tag list, since > until) and limit 0 record no decision and take no permit and no connection, even on a saturated reader', async () => {
    const held = await readerPoolOf(layer.database).connect();
    try {
      const acquires = () => metricValue('buzz_db_pool_acquire_started_total');
      const a0 = await acquires();
      const nothing: NostrFilter[] = [
        { kinds: [], tags: {}, extensions: {} },
        { kinds: [1], tags: { e: [] }, extensions: {} },
        { kinds: [1], tags: { t: ['x'], p: [] }, extensions: {} },
        { ids: [], tags: {}, extensions: {} },
        { authors: [], tags: {}, extensions: {} },
        { since: 200, until: 100, tags: {}, extensions: {} },
      ];
      const o = await observe(async () => {
        const pages: unknown[] = [];
        for await (const page of query.history(communityWide(community), [...nothing, { kinds: [1], limit: 0, tags: {}, extensions: {} }], true, { path: 'req_historical' })) pages.push(page.events);
        const n = await query.count(communityWide(community), nothing, { path: 'count_req' });
        return { pages, n };
      });
      expect(o.error).toBeUndefined();
      expect(o.value).toEqual({ pages: [...nothing.map(() => []), []], n: 0 });
      expect(o.routes).toEqual({});
      expect(await acquires()).toBe(a0);
      expect(layer.app.get(HistoryReadGate).inUse).toBe(0);
    } finally {
      held.release();
    }
  });

  (faults.supported ? it : it.skip)('control: a history read against an unreachable (frozen) reader is shed until a dial fails, then falls back to the writer', async () => {
    // A frozen replica accepts TCP and never answers. Its pooled connection fails the proof; a
    // fresh dial looks like a busy replica's until it fails at READER_DIAL_TIMEOUT_MS (issue 17:
    // a busy reader sheds, never spills); from then on the reader is down and reads fall back.
    const count = () => query.count(communityWide(community), [{ kinds: [1], tags: {}, extensions: {} }], { path: 'count_req' });
    expect(await count()).toBe(0);
    // Let the release check return the connection first: a connection frozen mid-ROLLBACK would
    // make the pool read as saturated (the accepted residual of §3.5), which sheds instead.
    const pool = readerPoolOf(layer.database);
    await waitUntil('reader connection back in the pool', () => pool.totalCount === 1 && pool.idleCount === 1);
    await db.cluster.freezeReplica();
    try {
      const o = await observe(count);
      expect(o.error).toBeUndefined();
      expect(o.value).toBe(0);
      expect(Object.keys(o.routes)).toHaveLength(1);
      expect(Object.keys(o.routes)[0]).toMatch(/^count_req\/writer\/reader_(acquire_timeout|proof_timeout)$/);
      expect(Object.keys(o.routes).some((k) => k.includes('rejected'))).toBe(false);
      // Its connection is gone; the next read's dial hangs, so it is shed.
      await waitUntil('the frozen connection closed', () => pool.totalCount === 0 || layer.readers.dialsFailing());
      if (!layer.readers.dialsFailing()) {
        const shed = await observe(count);
        expect(shed.routes).toEqual({ 'count_req/rejected/reader_acquire_timeout': 1 });
      }
      await waitUntil('a dial to the frozen replica failed', () => layer.readers.dialsFailing(), 10_000);
      // Down: the writer serves. (The proof is renewed: the probe is stopped in this layer
      // and the wait above may have aged it past the budget.)
      layer.proof.open(FAR_WALL);
      const again = await observe(count);
      expect(again.routes).toEqual({ 'count_req/writer/reader_acquire_timeout': 1 });
    } finally {
      await db.cluster.thawReplica();
    }
  }, 30_000);

  (faults.supported ? it : it.skip)('control: a stopped reader (refused dials) falls back to the writer', async () => {
    // The probe is stopped in this layer: keep the proof within the budget (an earlier
    // test may have aged it), so the decision is about the reader alone.
    layer.proof.open(FAR_WALL);
    await db.cluster.stopReplica();
    try {
      const o = await observe(() => routedWhere(layer, 'req_historical'));
      expect(o.value).toBe('writer');
      expect(Object.keys(o.routes)[0]).toMatch(/^req_historical\/writer\/reader_/);
      expect(Object.keys(o.routes).some((k) => k.includes('rejected'))).toBe(false);
    } finally {
      await db.cluster.startReplica();
      await db.waitForReplica(20_000);
    }
  }, 30_000);
});

(faults.supported ? describe : describe.skip)('stalled_reader_sessions_release_their_slots_for_new_connections', () => {
  let layer: OpenLayer;
  beforeAll(async () => {
    layer = await layerWith(1);
  }, 30_000);
  afterAll(async () => {
    await db.cluster.heal();
    await layer?.close();
  }, 30_000);

  it('a stalled release check sheds (never spills) for at most its 5 s bound, then the reader recovers', async () => {
    const pool = readerPoolOf(layer.database);
    const { session } = await layer.routed.session({ path: 'bridge_query', predicate: BOUNDED }, where);
    expect(session.isReplica()).toBe(true);
    await db.cluster.freezeReplica();
    const released = performance.now();
    session.release(); // the permit is back at once; the connection sits in the stalled ROLLBACK
    expect(layer.app.get(HistoryReadGate).inUse).toBe(0);
    expect(readerSaturated(layer.database)).toBe(true);
    const shed = await observe(() => routedWhere(layer, 'req_historical'));
    expect((shed.error as HistoryReadRejectedError).reason).toBe('reader_acquire_timeout');
    expect(shed.routes).toEqual({ 'req_historical/rejected/reader_acquire_timeout': 1 });
    expect(shed.spilled).toEqual({});
    // Past the bound the connection is closed and its slot freed for a new connection.
    await waitUntil('release check bound frees the slot', () => pool.totalCount === 0, 8000);
    const waited = performance.now() - released;
    expect(waited).toBeGreaterThan(4500);
    expect(waited).toBeLessThan(6500);
    await db.cluster.thawReplica();
    // Retry through any remaining window; the read must recover onto the reader.
    await waitUntil(
      'history read back on the replica',
      async () => {
        layer.proof.open(FAR_WALL); // the test's entry ages like a beat: keep it within the budget
        return (await observe(() => routedWhere(layer, 'req_historical'))).value === 'replica';
      },
      10_000,
      100,
    );
  }, 30_000);
});
