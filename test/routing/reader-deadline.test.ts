/**
 * The reader transaction's statement deadline is tighten-only against the reader session's own
 * `statement_timeout` (design choice, database.md §2.1), which the relay reads once per pooled
 * connection: a session value tighter than 20 s wins, a looser or unset one gives 20 s, and the
 * transaction-local value never outlives the transaction.
 */
import { sql } from 'kysely';
import { BOUNDED } from '../../packages/read-path/src/routing/route-predicate.js';
import { createTestDatabase, type TestDatabase } from '../harness/test-database.js';
import { DatabaseLayer, startDatabaseLayer } from './database-layer.js';

let db: TestDatabase;
const layers: DatabaseLayer[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
}, 30_000);

afterAll(async () => {
  await Promise.all(layers.map((l) => l.close()));
  await db?.drop();
}, 30_000);

/** A layer whose one reader connection starts with `statement_timeout` = `sessionMs`. */
async function layerWithReaderTimeout(sessionMs: number): Promise<DatabaseLayer> {
  const url = new URL(db.readerUrl);
  url.searchParams.set('options', `-c statement_timeout=${sessionMs}`);
  const layer = await startDatabaseLayer(db, { READ_DATABASE_URL: url.toString(), BUZZ_DB_READ_POOL_SIZE: '1', BUZZ_REPLICA_READ_MAX_AGE_MS: '5000' });
  layers.push(layer);
  await layer.fence.waitForBeats(1);
  return layer;
}

async function transactionTimeout(layer: DatabaseLayer): Promise<{ s: string; backend: number; replica: boolean }> {
  return layer.routed.read({ path: 'bridge_query', predicate: BOUNDED }, async (d) => {
    const { rows } = await sql<{ s: string; backend: number; replica: boolean }>`
      select current_setting('statement_timeout') as s, pg_backend_pid() as backend, pg_is_in_recovery() as replica`.execute(d);
    return rows[0];
  });
}

async function sessionTimeout(layer: DatabaseLayer): Promise<{ s: string; backend: number }> {
  const client = await layer.readers.acquire('maintenance');
  try {
    const { rows } = await client.query<{ s: string; backend: number }>(`select current_setting('statement_timeout') as s, pg_backend_pid() as backend`);
    return rows[0];
  } finally {
    client.release();
  }
}

describe('reader transaction deadline', () => {
  it.each([
    [5000, '5s'],
    [60_000, '20s'],
    [0, '20s'],
  ])('a reader session at %i ms reads under %s, on every transaction of the connection, and keeps its own value', async (sessionMs, expected) => {
    const layer = await layerWithReaderTimeout(sessionMs);
    const first = await transactionTimeout(layer);
    const second = await transactionTimeout(layer);
    expect(first).toEqual({ s: expected, backend: first.backend, replica: true });
    expect(second).toEqual({ s: expected, backend: first.backend, replica: true });
    const session = await sessionTimeout(layer);
    expect(session.backend).toBe(first.backend);
    expect(session.s).toBe(sessionMs === 0 ? '0' : sessionMs === 5000 ? '5s' : '1min');
  });
});

describe('reader transaction settings', () => {
  // JIT compiled a many-valued tag page's plan on every execution (database/pools.ts NO_JIT):
  // each proved transaction turns it off in its first statement, and only for itself.
  it('a proved replica read runs without JIT; the session keeps the server default', async () => {
    const layer = await layerWithReaderTimeout(0);
    const read = () =>
      layer.routed.read({ path: 'bridge_query', predicate: BOUNDED }, async (d) => {
        const { rows } = await sql<{ jit: string; replica: boolean; backend: number }>`
          select current_setting('jit') as jit, pg_is_in_recovery() as replica, pg_backend_pid() as backend`.execute(d);
        return rows[0];
      });
    const first = await read();
    expect(first).toEqual({ jit: 'off', replica: true, backend: first.backend });
    const client = await layer.readers.acquire('maintenance');
    try {
      const { rows } = await client.query<{ jit: string; backend: number }>(`select current_setting('jit') as jit, pg_backend_pid() as backend`);
      expect(rows[0]).toEqual({ jit: 'on', backend: first.backend });
    } finally {
      client.release();
    }
  });
});
