/**
 * A read's cost is bounded before it reaches a database (docs/security.md), through the built
 * relay on a real writer and streaming replica:
 *
 * - a filter over the shape limits is refused at parse, on the wire and over HTTP, and the widest
 *   filter the limits admit is served;
 * - client-driven reads on the writer hold at most BUZZ_DB_WRITER_READ_CAP writer connections, so
 *   event writes still get one while such reads are stuck, reads queued for the cap hold no
 *   history memory, and reads of many-valued filters hold at most BUZZ_DB_WRITER_HEAVY_READ_CAP;
 * - a read whose client went away is cancelled in Postgres;
 * - a client read on the writer ends at BUZZ_DB_CLIENT_READ_TIMEOUT_MS.
 *
 * Reads are made to hang for real: a test transaction holds an ACCESS EXCLUSIVE lock on the
 * oldest partition of `events`. A filter without `kinds` is served by the writer, and a page the
 * recent window cannot fill reads every partition, so it waits on that lock; event writes go to
 * the current month's partition and do not.
 */
import { randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { Client } from 'pg';
import { createTestDatabase, TestDatabase } from '../harness/test-database.js';
import { httpRequest, newIdentity, nip98Header, RawClient } from '../harness/nostr-clients.js';
import { RelayProcess, startRelay } from '../harness/relay-process.js';
import { metricSum } from '../harness/relay-metrics.js';
import { HISTORY_PAGE_LEASE_BYTES } from '../../src/events/event-query.service.js';

let db: TestDatabase;
let relay: RelayProcess;
let strict: RelayProcess;
let locker: Client;
let observer: Client;
const alice = newIdentity();

const common = (db: TestDatabase) => ({
  DATABASE_URL: db.writerUrl,
  READ_DATABASE_URL: db.readerUrl ?? '',
  BUZZ_DEFAULT_COMMUNITY_HOSTS: 'localhost,127.0.0.1',
  BUZZ_RATE_LIMIT_HUMAN_WS_EVENTS_PER_SEC: '100000',
  BUZZ_RATE_LIMIT_HUMAN_MESSAGES_PER_MIN: '100000',
  BUZZ_RATE_LIMIT_HUMAN_API_CALLS_PER_MIN: '100000',
  // Nothing but the lock holder or a cancel ends a stuck read within the test.
  BUZZ_DB_LOCK_TIMEOUT_MS: '120000',
});

beforeAll(async () => {
  db = await createTestDatabase();
  relay = await startRelay({ ...common(db), BUZZ_DB_POOL_SIZE: '4', BUZZ_DB_WRITER_READ_CAP: '2', BUZZ_DB_CLIENT_READ_TIMEOUT_MS: '120000' });
  strict = await startRelay({ ...common(db), BUZZ_DB_CLIENT_READ_TIMEOUT_MS: '400' });
  for (const c of [(locker = new Client({ connectionString: db.writerUrl })), (observer = new Client({ connectionString: db.writerUrl }))]) {
    c.on('error', () => undefined);
    await c.connect();
  }
});

afterAll(async () => {
  await locker?.end().catch(() => undefined);
  await observer?.end().catch(() => undefined);
  await relay?.stop();
  await strict?.stop();
  await db?.drop();
});

async function oldestPartition(): Promise<string> {
  const { rows } = await observer.query<{ name: string }>(
    `select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid
      where i.inhparent = 'events'::regclass order by c.relname limit 1`,
  );
  return rows[0].name;
}

async function whilePartitionLocked<T>(fn: () => Promise<T>): Promise<T> {
  const partition = await oldestPartition();
  await locker.query('begin');
  await locker.query(`lock table ${partition} in access exclusive mode`);
  try {
    return await fn();
  } finally {
    await locker.query('rollback');
  }
}

/** Relay backends waiting on a lock (the stuck reads), polled until `want` holds or 20 s pass. */
async function lockWaiters(want: (n: number) => boolean): Promise<number> {
  let n = -1;
  for (let i = 0; i < 200; i++) {
    const { rows } = await observer.query<{ n: number }>(
      `select count(*)::int as n from pg_stat_activity
        where datname = current_database() and application_name = 'buzz-relay' and wait_event_type = 'Lock'`,
    );
    n = rows[0].n;
    if (want(n)) return n;
    await new Promise((r) => setTimeout(r, 100));
  }
  return n;
}

const wideKeys = (n: number, values = 1) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`#k${i}`, Array.from({ length: values }, (_, v) => `v${v}`)]));

describe('filter shape limits', () => {
  it('refuses a 500-key filter at parse with the limit named, and the connection goes on', async () => {
    const c = await RawClient.authed(relay.wsUrl, alice);
    const closed = await c.req('wide', wideKeys(500));
    expect(closed.end).toEqual(['CLOSED', 'wide', 'invalid: invalid filter: filter has 500 tag keys, maximum is 8']);
    expect(c.frames).toContainEqual(['NOTICE', 'invalid message: invalid filter: filter has 500 tag keys, maximum is 8']);
    expect((await c.req('after', { kinds: [1], limit: 1 })).end).toEqual(['EOSE', 'after']);
    c.close();
  });

  it('refuses the same filter over HTTP with a 400 naming the limit', async () => {
    const body = JSON.stringify([wideKeys(500)]);
    const url = `${relay.httpUrl}/count`;
    const res = await httpRequest(url, { method: 'POST', headers: { 'content-type': 'application/json', authorization: nip98Header(alice, url, body) }, body });
    expect(res.status).toBe(400);
    expect(JSON.parse(res.body)).toEqual({ error: 'invalid filters: filter 0: filter has 500 tag keys, maximum is 8' });
  });

  it('serves the widest admitted filter (8 tag keys, 2,000 values, no kinds) on the writer', async () => {
    const c = await RawClient.authed(relay.wsUrl, alice);
    const tag = `wide-${Math.random().toString(36).slice(2)}`;
    const ev = alice.sign({ kind: 1, content: 'wide', tags: Array.from({ length: 8 }, (_, i) => [`k${i}`, i === 0 ? tag : 'v0']) });
    expect(await c.publish(ev)).toEqual([true, '']);
    const filter = wideKeys(8, 250);
    (filter['#k0'] as string[])[249] = tag;
    const res = await c.req('widest', filter);
    expect(res.end).toEqual(['EOSE', 'widest']);
    expect(res.events.map((e) => e.id)).toEqual([ev.id]);
    c.close();
  });
});

describe('client reads on the writer', () => {
  it('hold at most BUZZ_DB_WRITER_READ_CAP writer connections: writes go on while reads are stuck', async () => {
    // Four keys: one key's reads hold at most its share of the cap (fair-share.test.ts).
    const readers = await Promise.all(Array.from({ length: 4 }, () => RawClient.authed(relay.wsUrl, newIdentity())));
    const publisher = await RawClient.authed(relay.wsUrl, alice);
    await whilePartitionLocked(async () => {
      // Four different reads (identical ones would share one read: single flight).
      readers.forEach((r, i) => r.send(['REQ', `stuck-${i}`, { limit: 100 + i }]));
      expect(await lockWaiters((n) => n >= 2)).toBe(2);
      // Only the two running reads hold history memory (a lease each): the two queued for the cap
      // hold none, so a flood of queued reads cannot fill the pool against everyone's REQs.
      expect(await metricSum(relay.metricsUrl, 'buzz_memory_in_use_bytes', { kind: 'history' })).toBeLessThanOrEqual(2 * HISTORY_PAGE_LEASE_BYTES);
      // Two more reads are waiting for the cap, not for a writer connection: a write gets one.
      const ev = alice.sign({ kind: 1, content: 'written while reads are stuck' });
      expect(await publisher.publish(ev)).toEqual([true, '']);
      // Past the cap's wait, the queued reads are refused (retryable), not left waiting.
      const refused = await Promise.all(readers.map((r, i) => r.waitFor((f) => f[0] === 'CLOSED' && f[1] === `stuck-${i}`, 10_000).catch(() => undefined)));
      expect(refused.filter((f) => f !== undefined).map((f) => f![2])).toEqual(['error: database error', 'error: database error']);
      expect(await lockWaiters((n) => n === 2)).toBe(2);
    });
    // Once the lock is gone the stuck reads finish with EOSE.
    for (let i = 0; i < 4; i++) {
      const end = await readers[i].waitFor((f) => (f[0] === 'EOSE' || f[0] === 'CLOSED') && f[1] === `stuck-${i}`, 10_000);
      expect(['EOSE', 'CLOSED']).toContain(end[0]);
    }
    expect(readers.flatMap((r) => r.frames.filter((f) => f[0] === 'EOSE')).length).toBe(2);
    [...readers, publisher].forEach((r) => r.close());
  });

  it('of filters with many values hold at most BUZZ_DB_WRITER_HEAVY_READ_CAP (1) places: a light read still gets one', async () => {
    const heavy = await Promise.all(Array.from({ length: 3 }, () => RawClient.authed(relay.wsUrl, newIdentity())));
    const light = await RawClient.authed(relay.wsUrl, newIdentity());
    // 65 authors and no kinds: a writer read over the heavy line (HEAVY_READ_TERMS), which reads every partition.
    const authors = () => Array.from({ length: 65 }, () => randomBytes(32).toString('hex'));
    await whilePartitionLocked(async () => {
      heavy.forEach((r, i) => r.send(['REQ', `heavy-${i}`, { authors: authors(), limit: 100 + i }]));
      light.send(['REQ', 'light', { limit: 99 }]);
      expect(await lockWaiters((n) => n >= 2)).toBe(2);
      // The two heavy reads without a place are refused after the wait; the light one runs on.
      const ends = await Promise.all(heavy.map((r, i) => r.waitFor((f) => f[0] === 'CLOSED' && f[1] === `heavy-${i}`, 10_000).catch(() => undefined)));
      expect(ends.filter((f) => f !== undefined).map((f) => f![2])).toEqual(['error: database error', 'error: database error']);
      expect(light.frames.filter((f) => f[1] === 'light')).toEqual([]);
      expect(await lockWaiters((n) => n === 2)).toBe(2);
    });
    expect((await light.waitFor((f) => (f[0] === 'EOSE' || f[0] === 'CLOSED') && f[1] === 'light', 10_000))[0]).toBe('EOSE');
    [...heavy, light].forEach((r) => r.close());
  });

  it('are cancelled in Postgres when their client goes away', async () => {
    const c = await RawClient.authed(relay.wsUrl, alice);
    await whilePartitionLocked(async () => {
      c.send(['REQ', 'abandoned', {}]);
      expect(await lockWaiters((n) => n === 1)).toBe(1);
      c.ws.terminate();
      // The lock is still held: only a cancel ends the wait (lock and read deadlines are 120 s).
      expect(await lockWaiters((n) => n === 0)).toBe(0);
    });
  });

  it('over HTTP are cancelled in Postgres when the client hangs up', async () => {
    await whilePartitionLocked(async () => {
      const body = JSON.stringify([{ limit: 9 }]);
      const url = `${relay.httpUrl}/query`;
      const req = request(url, { method: 'POST', headers: { 'content-type': 'application/json', authorization: nip98Header(alice, url, body) } });
      req.on('error', () => undefined);
      req.end(body);
      expect(await lockWaiters((n) => n === 1)).toBe(1);
      req.destroy();
      expect(await lockWaiters((n) => n === 0)).toBe(0);
    });
  });

  it('end at BUZZ_DB_CLIENT_READ_TIMEOUT_MS with "error: query timed out", and the relay serves on', async () => {
    const c = await RawClient.authed(strict.wsUrl, alice);
    await whilePartitionLocked(async () => {
      expect((await c.req('slow', {})).end).toEqual(['CLOSED', 'slow', 'error: query timed out']);
    });
    expect(await c.publish(alice.sign({ kind: 1, content: 'after the deadline' }))).toEqual([true, '']);
    expect((await c.req('fast', {})).end).toEqual(['EOSE', 'fast']);
    c.close();
  });
});
