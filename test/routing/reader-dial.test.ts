/**
 * A busy reader is not a dead reader (issue 17, seed 000). The replica is real; a TCP proxy in
 * front of it makes the faults a replica's own process cannot show:
 *
 * - it accepts slowly (each connection held 600 ms, past the 150 ms acquire budget): history
 *   reads that time out while the pool is still opening connections are shed, never served by
 *   the writer, and once the dials finish the replica serves them;
 * - it accepts and never answers (a black hole): reads are shed until a dial fails at its own
 *   bound, then fall back to the writer as a reader that is down;
 * - it resets every connection (a refused dial): reads fall back to the writer at once.
 */
import { sql } from 'kysely';
import { RoutedReader } from '../../packages/read-path/src/routing/routed-reader.service.js';
import { HistoryReadRejectedError } from '../../packages/read-path/src/database/database-errors.js';
import { createTestDatabase, TestDatabase } from '../harness/test-database.js';
import { startTcpProxy, TcpProxy } from '../harness/tcp-proxy.js';
import { delta, routeDecisions, startDatabaseLayer, waitUntil, type DatabaseLayer } from './database-layer.js';
import { readerPoolOf } from '../harness/pools.js';

let db: TestDatabase;
let proxy: TcpProxy;
let layer: DatabaseLayer;

beforeAll(async () => {
  db = await createTestDatabase();
  const target = new URL(db.readerUrl);
  proxy = await startTcpProxy(target.hostname, Number(target.port));
  layer = await startDatabaseLayer(db, { READ_DATABASE_URL: proxy.url(db.readerUrl), BUZZ_REPLICA_READ_MAX_AGE_MS: '5000', BUZZ_DB_READ_POOL_SIZE: '8' });
  await layer.fence.waitForBeats(1);
}, 30_000);

afterAll(async () => {
  await layer?.close();
  await proxy?.close();
  await db?.drop();
});

type Served = 'replica' | 'writer' | 'rejected';

/** One history read through the RoutedReader: which server answered, or that it was shed. */
function historyRead(routed: RoutedReader): Promise<Served> {
  return routed
    .read({ path: 'req_historical', predicate: { kind: 'bounded' } }, async (d) => {
      const { rows } = await sql<{ standby: boolean }>`select pg_is_in_recovery() as standby`.execute(d);
      return rows[0].standby ? ('replica' as const) : ('writer' as const);
    })
    .catch((err: unknown) => {
      if (err instanceof HistoryReadRejectedError) return 'rejected' as const;
      throw err;
    });
}

async function burst(n: number): Promise<{ served: Served[]; routes: Record<string, number> }> {
  const before = await routeDecisions();
  const served = await Promise.all(Array.from({ length: n }, () => historyRead(layer.routed)));
  return { served, routes: delta(before, await routeDecisions()) };
}

/** Empties the reader pool, so the next reads must dial. */
async function drainReaderPool(): Promise<void> {
  const pool = readerPoolOf(layer.database);
  await waitUntil('reader connections idle', () => pool.idleCount === pool.totalCount);
  const clients = await Promise.all(Array.from({ length: pool.totalCount }, () => pool.connect()));
  for (const c of clients) c.release(new Error('drained by the test'));
  await waitUntil('reader pool empty', () => pool.totalCount === 0);
}

it('sheds reads while a slowly accepting replica is still being dialed, then serves them from it', async () => {
  await drainReaderPool();
  proxy.mode = { kind: 'pass', delayMs: 600 };
  const first = await burst(6);
  expect(first.served).not.toContain('writer');
  expect(first.served).toContain('rejected');
  expect(Object.keys(first.routes).filter((k) => k.includes('/writer/'))).toEqual([]);
  expect(first.routes['req_historical/rejected/reader_acquire_timeout']).toBeGreaterThan(0);
  // The dials those reads started were not cut off at the acquire budget: they finish, and the
  // pool serves the same burst from the replica.
  const pool = readerPoolOf(layer.database);
  await waitUntil('the dials connected', () => pool.totalCount >= 6 && pool.idleCount === pool.totalCount);
  const second = await burst(6);
  expect(second.served).toEqual(Array(6).fill('replica'));
}, 30_000);

it('sheds reads to a black hole until a dial fails, then falls back to the writer', async () => {
  await drainReaderPool();
  proxy.mode = { kind: 'blackhole' };
  const first = await burst(1);
  expect(first.served).toEqual(['rejected']);
  expect(first.routes).toEqual({ 'req_historical/rejected/reader_acquire_timeout': 1 });
  await waitUntil('the dial failed', () => layer.readers.dialsFailing(), 10_000);
  const after = await burst(1);
  expect(after.served).toEqual(['writer']);
  expect(after.routes).toEqual({ 'req_historical/writer/reader_acquire_timeout': 1 });
}, 30_000);

it('falls back to the writer at once when the replica refuses connections, and recovers', async () => {
  await drainReaderPool();
  proxy.mode = { kind: 'reset' };
  const refused = await burst(2);
  expect(refused.served).toEqual(['writer', 'writer']);
  expect(Object.keys(refused.routes).every((k) => k.startsWith('req_historical/writer/reader_'))).toBe(true);
  proxy.mode = { kind: 'pass', delayMs: 0 };
  await waitUntil('served by the replica again', async () => (await historyRead(layer.routed)) === 'replica', 10_000, 100);
}, 30_000);
