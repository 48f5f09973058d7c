/**
 * The read gates' fair shares on the real pair (docs/security.md, "Connection limits and fair
 * shares"): the writer-read cap, the replica history-read gate and the search gate each let one
 * tenant (the relay passes the client's key) hold at most its share of their permits. A tenant
 * over its share is refused with ReadShareExceededError once its wait ends, and another tenant's
 * read is served by the same database layer meanwhile. Refusals are counted by gate and reason.
 *
 * A read holds its permit for real: its work runs on its connection (or replica transaction) and
 * does not return until the test lets it.
 */
import { sql, type Kysely } from 'kysely';
import { loadConfig } from '../../src/config/app-config.js';
import { HistoryReadRejectedError, ReadShareExceededError, WriterReadRejectedError } from '../../packages/read-path/src/database/database-errors.js';
import type { DB } from '../../packages/read-path/src/database/database.types.js';
import { SearchGate } from '../../src/events/search-gate.js';
import { BOUNDED } from '../../packages/read-path/src/routing/route-predicate.js';
import { FenceProof } from '../harness/fence-proof.js';
import { createTestDatabase, type TestDatabase } from '../harness/test-database.js';
import { type DatabaseLayer, delta, metricValue, routeDecisions, startDatabaseLayer } from './database-layer.js';

let db: TestDatabase;
let layer: DatabaseLayer;
let proof: FenceProof;
const FAR_WALL = Date.now() + 3600_000;
const ENV = {
  BUZZ_REPLICA_READ_MAX_AGE_MS: '2000',
  // Writer-read cap 4, history-read gate 4 (a reader pool of 5), search gate 4: one permit each per tenant.
  BUZZ_DB_POOL_SIZE: '8',
  BUZZ_DB_WRITER_READ_CAP: '4',
  BUZZ_DB_READ_POOL_SIZE: '5',
  BUZZ_DB_SEARCH_POOL_SIZE: '4',
  BUZZ_KEY_SHARE_PERCENT: '25',
};

beforeAll(async () => {
  db = await createTestDatabase();
  layer = await startDatabaseLayer(db, ENV);
  await layer.fence.waitForBeats(1);
  await layer.fence.stopProbe();
  proof = await FenceProof.capture(layer.fence, db.readerUrl);
}, 30_000);

afterAll(async () => {
  await layer?.close();
  await db?.drop();
}, 30_000);

const where = async (d: Kysely<DB>) => ((await sql<{ s: boolean }>`select pg_is_in_recovery() as s`.execute(d)).rows[0].s ? 'replica' : 'writer');

/** Work that keeps its permit and connection until `let()` is called, and then says where it ran. */
function held(): { work: (d: Kysely<DB>) => Promise<string>; running: Promise<void>; let: () => void } {
  let release!: () => void;
  let started!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const running = new Promise<void>((r) => (started = r));
  return {
    work: async (d) => {
      started();
      await gate;
      return where(d);
    },
    running,
    let: () => release(),
  };
}

const outcome = (p: Promise<unknown>) => p.then((v) => v, (err: unknown) => err);
const refusals = (gate: string, reason: string) => metricValue('buzz_db_read_share_refusals_total', { gate, reason });

describe('the writer-read cap', () => {
  it("refuses a tenant's read past its share and serves another tenant's meanwhile", async () => {
    const flood = held();
    const running = layer.routed.clientReadOnWriter('subscription_history', flood.work, { tenant: 'flood' });
    await flood.running;
    const before = await refusals('writer_reads', 'share');
    const [over, other] = await Promise.all([
      outcome(layer.routed.clientReadOnWriter('subscription_history', where, { tenant: 'flood' })),
      outcome(layer.routed.clientReadOnWriter('subscription_history', where, { tenant: 'victim' })),
    ]);
    expect(over).toBeInstanceOf(ReadShareExceededError);
    expect((over as ReadShareExceededError).gate).toBe('writer_reads');
    expect(other).toBe('writer');
    expect(await refusals('writer_reads', 'share')).toBe(before + 1);
    flood.let();
    expect(await running).toBe('writer');
    // Its share comes back with its read.
    expect(await layer.routed.clientReadOnWriter('subscription_history', where, { tenant: 'flood' })).toBe('writer');
  });

  it('refuses for capacity, as before, a tenant within its share when other tenants fill the cap', async () => {
    const holders = ['a', 'b', 'c', 'd'].map(() => held());
    const running = holders.map((h, i) => layer.routed.clientReadOnWriter('subscription_history', h.work, { tenant: `t${i}` }));
    await Promise.all(holders.map((h) => h.running));
    const before = await refusals('writer_reads', 'capacity');
    const refused = await outcome(layer.routed.clientReadOnWriter('subscription_history', where, { tenant: 'victim' }));
    expect(refused).toBeInstanceOf(WriterReadRejectedError);
    expect(await refusals('writer_reads', 'capacity')).toBe(before + 1);
    holders.forEach((h) => h.let());
    await Promise.all(running);
  });
});

describe('the history-read gate', () => {
  it("refuses a tenant's routed read past its share (recorded rejected/history_read_cap) and routes another tenant's to the replica", async () => {
    // A proof as fresh as a beat now (the probe is stopped): bounded reads route to the replica.
    proof.open(FAR_WALL);
    const flood = held();
    const running = layer.routed.read({ path: 'req_historical', predicate: BOUNDED, tenant: 'flood' }, flood.work);
    await flood.running;
    const [r0, before] = [await routeDecisions(), await refusals('history_reads', 'share')];
    const [over, other] = await Promise.all([
      outcome(layer.routed.read({ path: 'req_historical', predicate: BOUNDED, tenant: 'flood' }, where)),
      outcome(layer.routed.read({ path: 'count_req', predicate: BOUNDED, tenant: 'victim' }, where)),
    ]);
    expect(over).toBeInstanceOf(ReadShareExceededError);
    expect((over as ReadShareExceededError).gate).toBe('history_reads');
    expect(other).toBe('replica');
    expect(delta(r0, await routeDecisions())).toEqual({ 'req_historical/rejected/history_read_cap': 1, 'count_req/replica/fresh': 1 });
    expect(await refusals('history_reads', 'share')).toBe(before + 1);
    flood.let();
    expect(await running).toBe('replica');
  });
});

describe('the search gate', () => {
  it("refuses a tenant's search past its share and runs another tenant's", async () => {
    const gate = new SearchGate(layer.database, layer.metrics, loadConfig(ENV));
    const flood = held();
    const running = gate.match('req_search_hydrate', flood.work, 'flood');
    await flood.running;
    const before = await refusals('search', 'share');
    const [over, other] = await Promise.all([
      outcome(gate.match('req_search_hydrate', where, 'flood')),
      outcome(gate.match('req_search_hydrate', where, 'victim')),
    ]);
    expect(over).toBeInstanceOf(ReadShareExceededError);
    expect((over as ReadShareExceededError).gate).toBe('search');
    expect(over).not.toBeInstanceOf(HistoryReadRejectedError);
    expect(other).toBe('replica');
    expect(await refusals('search', 'share')).toBe(before + 1);
    flood.let();
    expect(await running).toBe('replica');
  });
});
