/**
 * The client-read deadline on a real writer session (database/read-deadline.ts): an armed
 * connection's statements run under BUZZ_DB_CLIENT_READ_TIMEOUT_MS, and the next holder that is
 * not armed gets the session's own statement_timeout back before its first statement, including
 * a write that opens a transaction.
 */
import { Pool, PoolClient } from 'pg';
import { loadConfig } from '../../src/config/app-config.js';
import { poolSettings } from '../../packages/read-path/src/database/database.options.js';
import { relayDatabaseOptions } from '../../src/relay-database.modules.js';
import { armReadDeadline, disarmReadDeadline } from '../../packages/read-path/src/database/read-deadline.js';
import { createWriterPool } from '../../packages/read-path/src/database/pools.js';
import { createTestDatabase, TestDatabase } from '../harness/test-database.js';

let db: TestDatabase;
let pool: Pool;

beforeAll(async () => {
  db = await createTestDatabase();
  // One connection, so every checkout below is the same session.
  const config = loadConfig({ DATABASE_URL: db.writerUrl, BUZZ_DB_POOL_SIZE: '1', BUZZ_DB_STATEMENT_TIMEOUT_MS: '90000' });
  pool = createWriterPool(poolSettings(relayDatabaseOptions(config)), db.writerUrl, () => undefined);
});

afterAll(async () => {
  await pool?.end();
  await db?.drop();
});

async function timeout(client: PoolClient): Promise<string> {
  const { rows } = await client.query<{ t: string }>(`select current_setting('statement_timeout') as t`);
  return rows[0].t;
}

async function withClient<T>(fn: (c: PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    return await fn(client);
  } finally {
    client.release();
  }
}

describe('client-read deadline', () => {
  it('arms a read, and gives the session its own deadline back for the next holder', async () => {
    expect(await withClient(timeout)).toBe('90s');
    await withClient(async (c) => {
      armReadDeadline(c, 1500);
      expect(await timeout(c)).toBe('1500ms');
      expect(await timeout(c)).toBe('1500ms');
      disarmReadDeadline(c);
    });
    expect(await withClient(timeout)).toBe('90s');
  });

  it('is tighten-only against the session deadline', async () => {
    await withClient(async (c) => {
      armReadDeadline(c, 200_000);
      expect(await timeout(c)).toBe('90s');
      disarmReadDeadline(c);
    });
  });

  it('restores the session deadline before a write transaction, which keeps it', async () => {
    await withClient(async (c) => {
      armReadDeadline(c, 1500);
      await c.query('select 1');
      disarmReadDeadline(c);
    });
    await withClient(async (c) => {
      await c.query('begin');
      expect(await timeout(c)).toBe('90s');
      await c.query('rollback');
    });
  });

  it('cancels an armed read that overruns with 57014, and the connection serves on', async () => {
    await withClient(async (c) => {
      armReadDeadline(c, 100);
      await expect(c.query('select pg_sleep(5)')).rejects.toMatchObject({ code: '57014' });
      disarmReadDeadline(c);
    });
    expect(await withClient(timeout)).toBe('90s');
  });
});
