/**
 * The terminal timeout contract (seed 002) through the running relay: a read
 * that hits its statement deadline ends with `CLOSED "error: query timed out"`
 * (never EOSE) on REQ and COUNT, and `503 {"error":"query timed out"}` on the
 * bridge; once the database is healthy again the same reads succeed.
 *
 * The deadline is real: the operator cap (BUZZ_DB_STATEMENT_TIMEOUT_MS) is set
 * low and a test transaction holds an ACCESS EXCLUSIVE lock on `events`, so the
 * relay's reads wait and Postgres cancels them with SQLSTATE 57014.
 */
import { Client } from 'pg';
import { createTestDatabase, TestDatabase } from '../harness/test-database.js';
import { newIdentity, RawClient } from '../harness/nostr-clients.js';
import { RelayProcess, startRelay } from '../harness/relay-process.js';

let db: TestDatabase;
let relay: RelayProcess;
let locker: Client;
const alice = newIdentity();

beforeAll(async () => {
  db = await createTestDatabase();
  relay = await startRelay({
    DATABASE_URL: db.writerUrl,
    BUZZ_DEFAULT_COMMUNITY_HOSTS: 'localhost',
    BUZZ_DB_STATEMENT_TIMEOUT_MS: '300',
    BUZZ_REQUIRE_AUTH_TOKEN: 'false', // the bridge calls use the X-Pubkey development header
  });
  locker = new Client({ connectionString: db.writerUrl });
  locker.on('error', () => undefined);
  await locker.connect();
});

afterAll(async () => {
  await locker?.end().catch(() => undefined);
  // (the unavailable test terminates the locker's session too)
  await relay?.stop();
  await db?.drop();
});

async function whileEventsLocked<T>(fn: () => Promise<T>): Promise<T> {
  await locker.query('begin');
  await locker.query('lock table events in access exclusive mode');
  try {
    return await fn();
  } finally {
    await locker.query('rollback');
  }
}

describe('statement deadline', () => {
  it('ends a REQ with CLOSED "error: query timed out", never EOSE, and COUNT the same way', async () => {
    const c = await RawClient.authed(relay.wsUrl, alice);
    const { req, count } = await whileEventsLocked(async () => {
      const r = await c.req('slow', { kinds: [1] });
      c.send(['COUNT', 'slow-count', { kinds: [1] }]);
      const n = await c.waitFor((f) => f[1] === 'slow-count');
      return { req: r, count: n };
    });
    expect(req.end).toEqual(['CLOSED', 'slow', 'error: query timed out']);
    expect(c.frames.filter((f) => f[0] === 'EOSE' && f[1] === 'slow')).toEqual([]);
    expect(count).toEqual(['CLOSED', 'slow-count', 'error: query timed out']);
    const again = await c.req('slow', { kinds: [1] });
    expect(again.end).toEqual(['EOSE', 'slow']);
    c.close();
  });

  it('answers the bridge with 503 query timed out', async () => {
    const headers = { 'x-pubkey': alice.pubkey };
    const body = JSON.stringify([{ kinds: [1] }]);
    const status = await whileEventsLocked(async () => {
      const res = await fetch(`${relay.httpUrl}/query`, { method: 'POST', headers, body });
      return { status: res.status, body: await res.json() };
    });
    expect(status).toEqual({ status: 503, body: { error: 'query timed out' } });
    const healthy = await fetch(`${relay.httpUrl}/query`, { method: 'POST', headers, body });
    expect(healthy.status).toBe(200);
  });
});

describe('database unavailable', () => {
  it('maps an unreachable writer to 503 database unavailable and CLOSED error: database error', async () => {
    const c = await RawClient.authed(relay.wsUrl, alice);
    const body = JSON.stringify([{ kinds: [1] }]);
    const adminUrl = new URL(db.writerUrl);
    adminUrl.pathname = '/postgres';
    const admin = new Client({ connectionString: adminUrl.toString() });
    admin.on('error', () => undefined);
    await admin.connect();
    // Terminate the relay's writer sessions and refuse new ones: connections fail, nothing times out.
    await admin.query(`alter database ${JSON.stringify(db.name)} with allow_connections false`);
    try {
      await admin.query(`select pg_terminate_backend(pid) from pg_stat_activity where datname = $1`, [db.name]);
      const res = await fetch(`${relay.httpUrl}/query`, { method: 'POST', headers: { 'x-pubkey': alice.pubkey }, body });
      expect([res.status, await res.json()]).toEqual([503, { error: 'database unavailable' }]);
      const { end } = await c.req('down', { kinds: [1] });
      expect(end).toEqual(['CLOSED', 'down', 'error: database error']);
    } finally {
      await admin.query(`alter database ${JSON.stringify(db.name)} with allow_connections true`);
      await admin.end();
    }
    const recovered = await fetch(`${relay.httpUrl}/query`, { method: 'POST', headers: { 'x-pubkey': alice.pubkey }, body });
    expect(recovered.status).toBe(200);
    c.close();
  });
});
