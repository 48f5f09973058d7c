/**
 * One key's flood sheds that key's work first (docs/security.md, "Connection limits and fair
 * shares"), through the built relay on a real writer and streaming replica: while one key keeps
 * expensive reads in flight, its further REQs are refused with `rate-limited:` and another key's
 * REQ and COUNT are served on the same relay.
 *
 * The flood's reads hang for real: a test transaction holds an ACCESS EXCLUSIVE lock on
 * `event_refs`, and an `#e` filter without `kinds` (writer-pinned, so it takes the writer-read
 * cap; its ids are looked up in event_refs) waits on it. The victim's reads never touch that table.
 */
import { Client } from 'pg';
import { newIdentity, RawClient, type Frame } from '../harness/nostr-clients.js';
import { RelayProcess, startRelay } from '../harness/relay-process.js';
import { createTestDatabase, TestDatabase } from '../harness/test-database.js';
import { metricSum } from '../harness/relay-metrics.js';

let db: TestDatabase;
let relay: RelayProcess;
let locker: Client;
let observer: Client;

const READS_FOR_KEY = 'rate-limited: too many concurrent reads for this key';
const REQUESTS_FOR_KEY = 'rate-limited: too many concurrent requests for this key';

beforeAll(async () => {
  db = await createTestDatabase();
  relay = await startRelay({
    DATABASE_URL: db.writerUrl,
    READ_DATABASE_URL: db.readerUrl ?? '',
    BUZZ_DEFAULT_COMMUNITY_HOSTS: 'localhost',
    BUZZ_RATE_LIMIT_HUMAN_WS_EVENTS_PER_SEC: '100000',
    BUZZ_RATE_LIMIT_HUMAN_MESSAGES_PER_MIN: '100000',
    // Four client reads on the writer at once, a quarter (one) per key; eight handlers, two per key.
    BUZZ_DB_POOL_SIZE: '8',
    BUZZ_DB_WRITER_READ_CAP: '4',
    BUZZ_MAX_CONCURRENT_HANDLERS: '8',
    BUZZ_KEY_SHARE_PERCENT: '25',
    // Nothing but the lock holder ends a stuck read within the test.
    BUZZ_DB_LOCK_TIMEOUT_MS: '120000',
    BUZZ_DB_CLIENT_READ_TIMEOUT_MS: '120000',
  });
  for (const c of [(locker = new Client({ connectionString: db.writerUrl })), (observer = new Client({ connectionString: db.writerUrl }))]) {
    c.on('error', () => undefined);
    await c.connect();
  }
});

afterAll(async () => {
  await locker?.end().catch(() => undefined);
  await observer?.end().catch(() => undefined);
  await relay?.stop();
  await db?.drop();
});

async function whileRefsLocked<T>(fn: () => Promise<T>): Promise<T> {
  await locker.query('begin');
  await locker.query('lock table event_refs in access exclusive mode');
  try {
    return await fn();
  } finally {
    await locker.query('rollback');
  }
}

/** Relay backends waiting on the lock, polled until `want` holds or 20 s pass. */
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

const ended = (c: RawClient, subId: string, timeoutMs = 15_000): Promise<Frame> =>
  c.waitFor((f) => (f[0] === 'EOSE' || f[0] === 'CLOSED' || f[0] === 'COUNT') && f[1] === subId, timeoutMs);

describe("one key's flood", () => {
  it("refuses that key's reads with rate-limited while another key's REQ and COUNT are served", async () => {
    const flooder = newIdentity();
    const victim = newIdentity();
    const flood = await RawClient.authed(relay.wsUrl, flooder);
    const served = await RawClient.authed(relay.wsUrl, victim);
    const note = victim.sign({ kind: 1, content: 'the victim was here' });
    expect(await served.publish(note)).toEqual([true, '']);
    const refusedBefore = await metricSum(relay.metricsUrl, 'buzz_db_read_share_refusals_total', { gate: 'writer_reads', reason: 'share' });

    await whileRefsLocked(async () => {
      // Six different expensive reads at once (identical ones would share one read).
      for (let i = 0; i < 6; i++) flood.send(['REQ', `flood-${i}`, { '#e': [note.id], limit: 100 + i }]);
      // Whatever the flood was going to be told, it has been told: only reads that reached the
      // database are still running.
      const outcomes = await Promise.all(
        Array.from({ length: 6 }, (_, i) => ended(flood, `flood-${i}`, 5000).then((f) => String(f[2]), () => 'still running')),
      );

      const req = await served.req('mine', { kinds: [1], authors: [victim.pubkey], limit: 1 });
      expect(req.end).toEqual(['EOSE', 'mine']);
      expect(req.events.map((e) => e.id)).toEqual([note.id]);
      const from = served.frames.length;
      served.send(['COUNT', 'how-many', { kinds: [1], authors: [victim.pubkey], since: note.created_at - 60 }]);
      expect(await served.waitFor((f) => f[1] === 'how-many', 10_000, from)).toEqual(['COUNT', 'how-many', { count: 1 }]);

      // The flood's reads past its shares were refused for the key, not for the relay: two
      // handlers, one read on the writer.
      expect(outcomes.sort()).toEqual([READS_FOR_KEY, ...Array<string>(4).fill(REQUESTS_FOR_KEY), 'still running'].sort());
      expect(await lockWaiters((n) => n === 1)).toBe(1);
    });
    expect(await metricSum(relay.metricsUrl, 'buzz_db_read_share_refusals_total', { gate: 'writer_reads', reason: 'share' })).toBe(refusedBefore + 1);
    expect(await metricSum(relay.metricsUrl, 'buzz_ws_handler_refusals_total', { reason: 'share' })).toBeGreaterThanOrEqual(4);
    flood.close();
    served.close();
  });

  it('spread over several keys that fill the writer-read cap, has its longest read stopped so another key is still served', async () => {
    const flooders = Array.from({ length: 4 }, () => newIdentity());
    const victim = newIdentity();
    const floods = await Promise.all(flooders.map((id) => RawClient.authed(relay.wsUrl, id)));
    const served = await RawClient.authed(relay.wsUrl, victim);
    const note = victim.sign({ kind: 1, content: 'still here' });
    expect(await served.publish(note)).toEqual([true, '']);
    const stoppedBefore = await metricSum(relay.metricsUrl, 'buzz_db_read_share_refusals_total', { gate: 'writer_reads', reason: 'preempted' });

    await whileRefsLocked(async () => {
      // Each key holds its share (one read) of the cap of four: the cap is full.
      floods.forEach((c, i) => c.send(['REQ', 'hold', { '#e': [note.id], limit: 200 + i }]));
      expect(await lockWaiters((n) => n === 4)).toBe(4);
      // A second read of the first key is refused after the whole wait: the holds are that old.
      floods[0].send(['REQ', 'more', { '#e': [note.id], limit: 300 }]);
      expect((await ended(floods[0], 'more'))[2]).toBe(READS_FOR_KEY);

      const req = await served.req('mine', { kinds: [1], authors: [victim.pubkey], limit: 1 });
      expect(req.end).toEqual(['EOSE', 'mine']);
      expect(req.events.map((e) => e.id)).toEqual([note.id]);
      // One flood read was cancelled for it, and told why; the other three still wait on the lock.
      const outcomes = await Promise.all(floods.map((c) => ended(c, 'hold', 2000).then((f) => String(f[2]), () => 'still running')));
      expect(outcomes.sort()).toEqual([READS_FOR_KEY, 'still running', 'still running', 'still running']);
      expect(await lockWaiters((n) => n === 3)).toBe(3);
    });
    expect(await metricSum(relay.metricsUrl, 'buzz_db_read_share_refusals_total', { gate: 'writer_reads', reason: 'preempted' })).toBe(stoppedBefore + 1);
    [...floods, served].forEach((c) => c.close());
  });
});
