/**
 * The control plane does not wait behind the data plane (issue 27), on the built relay and the
 * real writer + replica pair:
 * - a tenant lookup that fails (the database refuses connections) answers a retryable 503 on
 *   the WebSocket upgrade and on the bridge, never `404 no community is configured for this
 *   host`, which would tell the client its community does not exist; once the database is back
 *   the same host connects;
 * - `/readyz` answers from the readiness sampler's state: with every writer connection held by
 *   client reads (waiting on a lock the test holds) the pod stays ready and says the writer is
 *   `busy`; with a writer that refuses connections it is not ready;
 * - a client that sends large frames faster than its input budget is read more slowly
 *   (`buzz_ws_input_paced_total`), and every one of its requests is still answered.
 */
import { randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { Client } from 'pg';
import { SLOW_SAMPLES_UNREACHABLE } from '../../src/health/readiness-sampler.service.js';
import { eventually } from '../harness/eventually.js';
import { httpRequest, newIdentity, RawClient } from '../harness/nostr-clients.js';
import { RelayFixture, startRelayFixture } from '../harness/relay-fixture.js';

const LOOKUP_FAILED = 'relay: the community lookup failed, retry later';

/** A WebSocket upgrade request for `host`, answered with an HTTP status (101 when it was accepted). */
function upgrade(httpUrl: string, host: string): Promise<{ status: number; body: string; retryAfter: string | undefined }> {
  return new Promise((resolve, reject) => {
    const req = request(httpUrl, {
      headers: { host, connection: 'Upgrade', upgrade: 'websocket', 'sec-websocket-version': '13', 'sec-websocket-key': randomBytes(16).toString('base64') },
    });
    req.once('upgrade', (res, socket) => {
      socket.destroy();
      resolve({ status: res.statusCode ?? 0, body: '', retryAfter: undefined });
    });
    req.once('response', (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, retryAfter: res.headers['retry-after'] as string | undefined }));
    });
    req.once('error', reject);
    req.end();
  });
}

async function readyz(fixture: RelayFixture): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await httpRequest(`${fixture.relay.httpUrl}/readyz`, { headers: { host: 'localhost' } });
  return { status: res.status, body: JSON.parse(res.body) as Record<string, unknown> };
}

/** Runs `fn` while the test database refuses connections and the relay's sessions are terminated. */
async function withDatabaseRefusing(fixture: RelayFixture, fn: () => Promise<void>): Promise<void> {
  const adminUrl = new URL(fixture.db.writerUrl);
  adminUrl.pathname = '/postgres';
  const admin = new Client({ connectionString: adminUrl.toString() });
  admin.on('error', () => undefined);
  await admin.connect();
  const name = JSON.stringify(fixture.db.name);
  await admin.query(`alter database ${name} with allow_connections false`);
  try {
    await admin.query(`select pg_terminate_backend(pid) from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()`, [fixture.db.name]);
    await fn();
  } finally {
    await admin.query(`alter database ${name} with allow_connections true`);
    await admin.end();
  }
}

describe('a failed tenant lookup', () => {
  let fixture: RelayFixture;
  beforeAll(async () => {
    fixture = await startRelayFixture({ BUZZ_REQUIRE_AUTH_TOKEN: 'false' });
    // A community this relay has never resolved, so its lookup must reach the database.
    await fixture.writer.query(`insert into communities (host, name) values ('tenant-b.test', 'b')`);
  });
  afterAll(() => fixture?.close());

  it('answers 503 (retry), never 404 (no such community), and the host connects once the database is back', async () => {
    await withDatabaseRefusing(fixture, async () => {
      const ws = await upgrade(fixture.relay.httpUrl, 'tenant-b.test');
      expect([ws.status, ws.body, ws.retryAfter]).toEqual([503, LOOKUP_FAILED, '1']);
      const bridge = await httpRequest(`${fixture.relay.httpUrl}/query`, { method: 'POST', headers: { host: 'tenant-b.test', 'x-pubkey': newIdentity().pubkey }, body: '[{"kinds":[1]}]' });
      expect([bridge.status, JSON.parse(bridge.body)]).toEqual([503, { error: 'database unavailable' }]);
      // A writer that refuses connections is unreachable: the pod leaves the Service, as before.
      await eventually('readiness sees the writer unreachable', async () => (await readyz(fixture)).body.writer === 'unreachable');
      expect((await readyz(fixture)).status).toBe(503);
    });
    await eventually('the host connects again', async () => (await upgrade(fixture.relay.httpUrl, 'tenant-b.test')).status === 101, 20_000);
    const c = await RawClient.connect(fixture.relay.wsUrl, { host: 'tenant-b.test' });
    expect(c.challenge).toMatch(/^[0-9a-f]+$/);
    c.close();
    // An unknown host is still told so while the database answers.
    expect((await upgrade(fixture.relay.httpUrl, 'nobody.example')).status).toBe(404);
  });
});

async function metric(fixture: RelayFixture, name: string): Promise<number> {
  const text = await (await fetch(fixture.relay.metricsUrl)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return Number(line?.slice(name.length + 1) ?? 0);
}

describe('input pacing', () => {
  let fixture: RelayFixture;
  beforeAll(async () => (fixture = await startRelayFixture()));
  afterAll(() => fixture?.close());

  it('reads a client that sends large frames fast more slowly, and answers all of its requests', async () => {
    const c = await RawClient.authed(fixture.relay.wsUrl, newIdentity());
    const hex = () => randomBytes(32).toString('hex');
    // Three filters of 2,000 values: about 400 KB a frame, six frames in a row (the burst is 1 MiB).
    const filters = Array.from({ length: 3 }, () => ({ authors: Array.from({ length: 1000 }, hex), '#p': Array.from({ length: 1000 }, hex), limit: 0 }));
    const paced0 = await metric(fixture, 'buzz_ws_input_paced_total');
    const subs = Array.from({ length: 6 }, (_, i) => `big-${i}`);
    for (const sub of subs) c.send(['REQ', sub, ...filters]);
    const ends = await Promise.all(subs.map((sub) => c.waitFor((f) => f[0] === 'EOSE' && f[1] === sub, 30_000)));
    expect(ends).toHaveLength(6);
    expect(await metric(fixture, 'buzz_ws_input_paced_total')).toBeGreaterThan(paced0);
    c.close();
  });
});

describe('/readyz while client reads hold every writer connection', () => {
  let fixture: RelayFixture;
  beforeAll(async () => {
    // Two writer connections, both usable by reads; lock waits and read deadlines outlast the test.
    fixture = await startRelayFixture({ BUZZ_DB_POOL_SIZE: '2', BUZZ_DB_WRITER_READ_CAP: '2', BUZZ_DB_LOCK_TIMEOUT_MS: '120000', BUZZ_DB_CLIENT_READ_TIMEOUT_MS: '120000' });
  });
  afterAll(() => fixture?.close());

  it('stays ready and reports the writer busy; the reads are served once the lock goes', async () => {
    // Two keys: each holds its fair share of the writer-read cap.
    const clients = [await RawClient.authed(fixture.relay.wsUrl, newIdentity()), await RawClient.authed(fixture.relay.wsUrl, newIdentity())];
    const locker = await fixture.writer.connect();
    try {
      await locker.query('begin');
      await locker.query('lock table events in access exclusive mode');
      // Filters without `kinds` are read on the writer: each waits on the lock holding a connection.
      clients[0].send(['REQ', 'held', { limit: 5 }]);
      clients[1].send(['REQ', 'held', { limit: 6 }]); // not the same read: identical ones would share one
      await eventually('both writer connections wait on the lock', async () => {
        const { rows } = await fixture.writer.query<{ n: string }>(
          `select count(*) as n from pg_stat_activity where datname = current_database() and application_name = 'buzz-relay' and wait_event_type = 'Lock'`,
        );
        return Number(rows[0].n) === 2;
      });
      await eventually('readiness samples the full pool', async () => (await readyz(fixture)).body.writer === 'busy');
      expect(await readyz(fixture)).toEqual({ status: 200, body: expect.objectContaining({ status: 'ready', writer: 'busy' }) });
      // However long client work holds the pool: more samples than a hung writer is given.
      const samples = () => metric(fixture, 'buzz_db_pool_acquire_attempts_total{pool_role="writer",operation="readiness",outcome="cancelled"}');
      const s0 = await samples();
      await eventually('more samples of the full pool', async () => (await samples()) >= s0 + SLOW_SAMPLES_UNREACHABLE + 1, 40_000);
      expect(await readyz(fixture)).toEqual({ status: 200, body: expect.objectContaining({ status: 'ready', writer: 'busy' }) });
    } finally {
      await locker.query('commit');
      locker.release();
    }
    const ends = await Promise.all(clients.map((c) => c.waitFor((f) => f[1] === 'held' && (f[0] === 'EOSE' || f[0] === 'CLOSED'), 20_000)));
    expect(ends.map((f) => f[0])).toEqual(['EOSE', 'EOSE']);
    await eventually('the writer is reachable again', async () => (await readyz(fixture)).body.writer === 'reachable');
    for (const c of clients) c.close();
  });
});
