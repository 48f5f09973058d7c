/**
 * Identical history reads share one database read (issue 17), on a real writer and streaming
 * replica, through EventQueryService and the RoutedReader:
 *
 * - identical reads waiting at the same time cost one route decision and one read, and each
 *   gets the whole page;
 * - reads with different scopes (communities), or a filter that can match a gated kind read by
 *   different readers, never share;
 * - a reader owed read-your-writes does not join, and sees its own write;
 * - a filter of many values, or one whose key would be long, reads on its own (no flight);
 * - a replica read still takes an identical read that arrives while its page is read, its proof
 *   within the staleness bound; a writer read takes none once its statement is on its way;
 * - a shared read that fails fails every waiter with the same database error;
 * - a waiter whose client goes away leaves the others their rows; when every waiter has gone
 *   the read is cancelled in Postgres.
 */
import { randomBytes } from 'node:crypto';
import { Client, Pool } from 'pg';
import { NostrEvent, NostrFilter } from '../../src/nostr/nostr.types.js';
import { EventQueryService, HistoryContext } from '../../src/events/event-query.service.js';
import { EventReadRepository } from '../../src/events/event-read.repository.js';
import { HistoryReadGate } from '../../packages/read-path/src/history-reads/history-read-gate.js';
import { HistoryReadRejectedError } from '../../packages/read-path/src/database/database-errors.js';
import { ReadScope } from '../../src/channels/read-scope.js';
import { createTestDatabase, TestDatabase } from '../harness/test-database.js';
import { adminPool, type DatabaseLayer, delta, metricValue, routeDecisions, startDatabaseLayer, waitUntil } from '../routing/database-layer.js';
import { insertRow, newCommunity } from '../routing/fixtures.js';

let db: TestDatabase;
let admin: Pool;
let layer: DatabaseLayer;
let query: EventQueryService;
let communityA: string;
let communityB: string;
const rowsA: string[] = [];
const rowsB: string[] = [];
const now = () => Math.floor(Date.now() / 1000);
const reader = () => randomBytes(32).toString('hex');
const kinds1: NostrFilter = { kinds: [1], limit: 50, tags: {}, extensions: {} };

beforeAll(async () => {
  db = await createTestDatabase();
  admin = adminPool(db.writerUrl);
  communityA = await newCommunity(admin);
  communityB = await newCommunity(admin);
  for (let i = 0; i < 3; i++) {
    rowsA.push(await insertRow(admin, communityA, { createdAtSecs: now() - i, kind: 1, content: `a${i}` }));
    rowsB.push(await insertRow(admin, communityB, { createdAtSecs: now() - i, kind: 1, content: `b${i}` }));
  }
  await db.waitForReplica();
  layer = await startDatabaseLayer(db, { BUZZ_REPLICA_READ_MAX_AGE_MS: '5000', BUZZ_DB_LOCK_TIMEOUT_MS: '60000' });
  await layer.fence.waitForBeats(1);
  query = new EventQueryService(layer.routed, new EventReadRepository());
}, 60_000);

afterAll(async () => {
  await layer?.close();
  await admin?.end();
  await db?.drop();
});

const scopeOf = (communityId: string, who?: string): ReadScope => ({ communityId, channels: 'any', includeGlobal: true, reader: who });

async function page(scope: ReadScope, filter: NostrFilter, ctx: HistoryContext, q = query): Promise<NostrEvent[]> {
  const out: NostrEvent[] = [];
  for await (const batch of q.history(scope, [filter], true, ctx)) out.push(...batch.events);
  return out;
}

async function observed<T>(fn: () => Promise<T>): Promise<{ value: T; routes: Record<string, number>; coalesced: number }> {
  const [r0, c0] = [await routeDecisions(), await metricValue('buzz_history_reads_coalesced_total')];
  const value = await fn();
  return { value, routes: delta(r0, await routeDecisions()), coalesced: (await metricValue('buzz_history_reads_coalesced_total')) - c0 };
}

const ids = (events: NostrEvent[]) => events.map((e) => e.id).sort();
const total = (routes: Record<string, number>) => Object.values(routes).reduce((a, b) => a + b, 0);

it('ten identical reads waiting together cost one read, and each gets the whole page', async () => {
  const o = await observed(() =>
    Promise.all(Array.from({ length: 10 }, () => {
      const who = reader();
      return page(scopeOf(communityA, who), kinds1, { path: 'req_historical', reader: who });
    })),
  );
  expect(total(o.routes)).toBe(1);
  expect(o.coalesced).toBe(9);
  for (const events of o.value) expect(ids(events)).toEqual([...rowsA].sort());
});

it('reads of two scopes never share rows', async () => {
  const o = await observed(() =>
    Promise.all([communityA, communityB, communityA, communityB].map((c) => page(scopeOf(c), kinds1, { path: 'req_historical', reader: reader() }))),
  );
  expect(total(o.routes)).toBe(2);
  expect(o.coalesced).toBe(2);
  expect(o.value.map(ids)).toEqual([rowsA, rowsB, rowsA, rowsB].map((r) => [...r].sort()));
});

it('a filter that can match a gated kind is shared only by the same reader', async () => {
  const [alice, bob] = [reader(), reader()];
  const open: NostrFilter = { limit: 50, tags: {}, extensions: {} };
  const o = await observed(() =>
    Promise.all([alice, bob, alice].map((who) => page(scopeOf(communityA, who), open, { path: 'req_historical', reader: who }))),
  );
  expect(o.coalesced).toBe(1);
  for (const events of o.value) expect(ids(events)).toEqual([...rowsA].sort());
});

it('a filter of many values, or with a long value, reads on its own and still gets its page', async () => {
  // 70 kinds: a short key, but more values than a flight takes.
  const many: NostrFilter = { kinds: [1, ...Array.from({ length: 69 }, (_, i) => 30_000 + i)], limit: 50, tags: {}, extensions: {} };
  const long: NostrFilter = { kinds: [1], limit: 50, tags: { t: ['x'.repeat(5000)] }, extensions: {} };
  for (const filter of [many, long]) {
    const o = await observed(() => Promise.all(Array.from({ length: 3 }, () => page(scopeOf(communityA), filter, { path: 'req_historical', reader: reader() }))));
    expect(o.coalesced).toBe(0);
    expect(total(o.routes)).toBe(3);
    for (const events of o.value) expect(ids(events)).toEqual(filter === many ? [...rowsA].sort() : []);
  }
});

it('a reader owed read-your-writes reads on its own and sees its write', async () => {
  const writer = reader();
  const own = await insertRow(admin, communityA, { createdAtSecs: now(), kind: 1, content: 'own write' });
  layer.routed.noteWrite({ communityId: communityA, pubkey: writer });
  const o = await observed(() =>
    Promise.all([reader(), writer].map((who) => page(scopeOf(communityA, who), kinds1, { path: 'req_historical', reader: who }))),
  );
  expect(o.coalesced).toBe(0);
  expect(total(o.routes)).toBe(2);
  expect(ids(o.value[1])).toContain(own);
  rowsA.push(own);
});

/**
 * A repository that, when a page's statement is about to be sent, lets the test start another
 * read in that same turn of the event loop: nothing the database answered can have been seen yet.
 */
class OnPageSent extends EventReadRepository {
  private pending: { then: () => void; when: 'sent' | 'read' } | undefined;

  /** `then` runs once, as the next page's statement is sent, or (`read`) once its rows are read. */
  next(then: () => void, when: 'sent' | 'read' = 'sent'): void {
    this.pending = { then, when };
  }

  override async queryPage(...args: Parameters<EventReadRepository['queryPage']>): ReturnType<EventReadRepository['queryPage']> {
    const hook = this.pending;
    this.pending = undefined;
    const sent = super.queryPage(...args);
    if (hook?.when === 'sent') hook.then();
    const rows = await sent;
    if (hook?.when === 'read') hook.then();
    return rows;
  }
}

describe('how long a read takes joiners', () => {
  const repo = new OnPageSent();
  const timed = () => new EventQueryService(layer.routed, repo);

  it('a replica read takes an identical read that arrives once its rows are read, its proof being within the bound', async () => {
    const q = timed();
    let late: Promise<NostrEvent[]> | undefined;
    const read = () => page(scopeOf(communityA), kinds1, { path: 'req_historical', reader: reader() }, q);
    const o = await observed(async () => {
      repo.next(() => {
        late = read();
      }, 'read');
      const early = await read();
      return [early, await late];
    });
    expect(late).toBeDefined();
    expect(o.routes).toEqual({ 'req_historical/replica/fresh': 1 });
    expect(o.coalesced).toBe(1);
    for (const events of o.value) expect(ids(events ?? [])).toEqual([...rowsA].sort());
  });

  it('a read that arrives once a writer read\'s statement is on its way reads on its own', async () => {
    const q = timed();
    // Group metadata: pinned to the writer, and shared like any other read (none stored here).
    const metadata: NostrFilter = { kinds: [39000], limit: 50, tags: {}, extensions: {} };
    let late: Promise<NostrEvent[]> | undefined;
    const read = () => page(scopeOf(communityA), metadata, { path: 'req_historical', reader: reader() }, q);
    const together = await observed(() => Promise.all([read(), read()]));
    expect(together.coalesced).toBe(1);
    const o = await observed(async () => {
      repo.next(() => {
        late = read();
      });
      const early = await read();
      return [early, await late];
    });
    expect(late).toBeDefined();
    expect(o.coalesced).toBe(0);
    expect(o.value).toEqual([[], []]);
  });
});

it('a shared read that is shed fails the read that started it; the reads that joined get one attempt of their own, together', async () => {
  const gate = layer.app.get(HistoryReadGate);
  const held = await Promise.all(Array.from({ length: gate.capacity }, () => gate.acquire()));
  const [r0, c0] = [await routeDecisions(), await metricValue('buzz_history_reads_coalesced_total')];
  const reads = Array.from({ length: 4 }, () => {
    const who = reader();
    return page(scopeOf(communityA, who), kinds1, { path: 'req_historical', reader: who }).then(
      (events) => ids(events),
      (err: unknown) => (err instanceof HistoryReadRejectedError ? 'shed' : err),
    );
  });
  // The first flight waits 1 s for a permit and is shed; then the permits come back.
  await waitUntil('the first flight was shed', async () => (delta(r0, await routeDecisions())['req_historical/rejected/history_read_cap'] ?? 0) === 1);
  for (const p of held) p!.release();
  const outcomes = await Promise.all(reads);
  const routes = delta(r0, await routeDecisions());
  expect(outcomes[0]).toBe('shed');
  expect(outcomes.slice(1)).toEqual(Array(3).fill([...rowsA].sort()));
  expect(routes['req_historical/rejected/history_read_cap']).toBe(1);
  expect(total(routes)).toBe(2); // the shed flight and the joiners' one read
  expect((await metricValue('buzz_history_reads_coalesced_total')) - c0).toBe(5); // 3 joins, then 2 joins of the retry
});

describe('while a lock holds the page back', () => {
  let locker: Client;
  const probe: NostrFilter = { limit: 7, tags: {}, extensions: {} }; // no kinds: served by the writer
  beforeAll(async () => {
    locker = new Client({ connectionString: db.writerUrl });
    locker.on('error', () => undefined);
    await locker.connect();
  });
  afterAll(() => locker?.end());

  async function lockEvents(): Promise<void> {
    await locker.query('begin');
    await locker.query('lock table events in access exclusive mode');
  }

  async function lockWaiters(): Promise<number> {
    const { rows } = await admin.query<{ n: number }>(
      `select count(*)::int as n from pg_stat_activity where datname = current_database() and application_name = 'buzz-relay' and wait_event_type = 'Lock'`,
    );
    return rows[0].n;
  }

  it('a shared read that fails fails every waiter with the same database error', async () => {
    const who = reader();
    await lockEvents();
    const reads = Array.from({ length: 4 }, () => page(scopeOf(communityA, who), probe, { path: 'req_historical', reader: who }).then(() => undefined, (e: { code?: string }) => e));
    await waitUntil('the shared read waits on the lock', async () => (await lockWaiters()) === 1);
    // End the read from outside, as a statement deadline would: every waiter gets 57014.
    await admin.query(`select pg_cancel_backend(pid) from pg_stat_activity where datname = current_database() and application_name = 'buzz-relay' and wait_event_type = 'Lock'`);
    const errors = await Promise.all(reads);
    await locker.query('rollback');
    expect(errors.map((e) => e?.code)).toEqual(['57014', '57014', '57014', '57014']);
    expect(new Set(errors).size).toBe(1);
  });

  it('a waiter that goes away leaves the others their rows; when all have gone the read is cancelled', async () => {
    const who = reader();
    await lockEvents();
    const leaving = new AbortController();
    const stay = page(scopeOf(communityA, who), probe, { path: 'req_historical', reader: who });
    const leave = page(scopeOf(communityA, who), probe, { path: 'req_historical', reader: who, signal: leaving.signal }).catch(() => 'gone');
    await waitUntil('the shared read waits on the lock', async () => (await lockWaiters()) === 1);
    leaving.abort();
    await new Promise((r) => setTimeout(r, 200));
    expect(await lockWaiters()).toBe(1); // still running for the waiter that stayed
    await locker.query('rollback');
    expect(ids(await stay)).toEqual([...rowsA].sort());
    expect(await leave).not.toBe('gone');

    await lockEvents();
    const all = [new AbortController(), new AbortController()];
    const gone = all.map((c) => page(scopeOf(communityA, who), probe, { path: 'req_historical', reader: who, signal: c.signal }).then(() => 'served', () => 'failed'));
    await waitUntil('the shared read waits on the lock', async () => (await lockWaiters()) === 1);
    for (const c of all) c.abort();
    await waitUntil('the read was cancelled while the lock is held', async () => (await lockWaiters()) === 0);
    await locker.query('rollback');
    expect(await Promise.all(gone)).toEqual(['failed', 'failed']);
  });
});
