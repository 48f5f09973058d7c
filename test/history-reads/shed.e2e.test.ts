/**
 * Seed 000 through the running relay: with a one-connection reader pool (history cap 1) held
 * busy, further history reads are shed as retryable (`CLOSED error: database error`, HTTP 503
 * `database unavailable`) instead of spilling onto the writer, while writer-only work
 * (`/readyz`, NIP-42 AUTH) stays fast. A REQ identical to the held read shares it (its proof is
 * within the budget) and is served with it.
 *
 * The reader is made busy without reaching into the relay: a test transaction holds an ACCESS
 * EXCLUSIVE lock on `events` on the primary. The lock is WAL-logged and replayed on the standby,
 * so the relay's replica read of `events` waits on it, holding the reader's only connection and
 * the only history permit. A spilled read would block on the same lock on the writer: it could
 * not come back fast, so a fast answer proves it was shed, and the metrics say so.
 */
import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { createTestDatabase, type TestDatabase } from '../harness/test-database.js';
import { httpRequest, newIdentity, RawClient } from '../harness/nostr-clients.js';
import { type RelayProcess, startRelay } from '../harness/relay-process.js';
import { waitUntil } from '../routing/database-layer.js';

let db: TestDatabase;
let relay: RelayProcess;
let locker: Client;
let replica: Client;
const alice = newIdentity();
const headers = { 'x-pubkey': alice.pubkey, host: 'localhost' };

beforeAll(async () => {
  db = await createTestDatabase();
  relay = await startRelay({
    DATABASE_URL: db.writerUrl,
    READ_DATABASE_URL: db.readerUrl,
    BUZZ_DEFAULT_COMMUNITY_HOSTS: 'localhost,127.0.0.1',
    BUZZ_DB_READ_POOL_SIZE: '1',
    // The bridge reads name their reader with the X-Pubkey development header.
    BUZZ_REQUIRE_AUTH_TOKEN: 'false',
    // Generous: a heartbeat delayed by a loaded machine must not send the holding read to the writer.
    BUZZ_REPLICA_READ_MAX_AGE_MS: '10000',
    BUZZ_RATE_LIMIT_HUMAN_WS_EVENTS_PER_SEC: '1000000',
    BUZZ_RATE_LIMIT_HUMAN_API_CALLS_PER_MIN: '1000000',
  });
  locker = new Client({ connectionString: db.writerUrl });
  replica = new Client({ connectionString: db.readerUrl });
  for (const c of [locker, replica]) {
    c.on('error', () => undefined);
    await c.connect();
  }
}, 30_000);

afterAll(async () => {
  await locker?.query('rollback').catch(() => undefined);
  await locker?.end().catch(() => undefined);
  await replica?.end().catch(() => undefined);
  await relay?.stop();
  await db?.drop();
}, 30_000);

async function metrics(): Promise<string> {
  return (await httpRequest(relay.metricsUrl, {})).body;
}

function sample(text: string, name: string, ...must: string[]): number {
  let total = 0;
  for (const line of text.split('\n')) if (line.startsWith(`${name}{`) && must.every((m) => line.includes(m))) total += Number(line.split(' ').pop());
  return total;
}

const post = (path: string, body: unknown) => httpRequest(`${relay.httpUrl}${path}`, { method: 'POST', headers, body: JSON.stringify(body) });

/**
 * Holds the reader busy (see the header) for the duration of fn. The holding REQ comes from an
 * identity that has written nothing: a reader's own recent write may send its bounded read to the
 * writer (read-your-writes) until the fence proves a newer heartbeat, and there it would wait on
 * the test's lock instead of holding the reader.
 */
async function withBusyReader<T>(fn: () => Promise<T>): Promise<T> {
  const holder = await RawClient.authed(relay.wsUrl, newIdentity());
  await locker.query('begin');
  await locker.query('lock table events in access exclusive mode');
  let failure: Error | undefined;
  try {
    // The standby replays the lock with the next WAL flush (the fence probe commits every 500 ms).
    await waitUntil('lock replayed on the standby', async () => {
      try {
        await replica.query(`set lock_timeout = 50; select 1 from events limit 1`);
        return false;
      } catch (err) {
        return (err as { code?: string }).code === '55P03';
      } finally {
        await replica.query('reset lock_timeout');
      }
    });
    // The first history read takes the only permit and the only reader connection, and waits.
    holder.send(['REQ', 'holder', { kinds: [1] }]);
    await waitUntil('relay replica read waiting on the lock', async () => {
      const { rows } = await replica.query(`select 1 from pg_stat_activity where application_name = 'buzz-relay-reader' and wait_event_type = 'Lock'`);
      return rows.length === 1;
    });
    return await fn();
  } catch (err) {
    failure = err as Error;
    throw err;
  } finally {
    await locker.query('rollback');
    // The held read completes once the lock is gone.
    const end = await holder.waitFor((f) => f[1] === 'holder' && (f[0] === 'EOSE' || f[0] === 'CLOSED'));
    holder.close();
    // When it is not EOSE: the first failure, where the reads went, and the relay's warnings.
    if (end[0] !== 'EOSE') {
      const routes = (await metrics()).split('\n').filter((l) => l.startsWith('buzz_db_route_decision{') && l.includes('req_historical'));
      throw new Error(
        `holder ended with ${JSON.stringify(end)}${failure ? ` after: ${failure.message}` : ''}\n${routes.join('\n')}\nrelay output:\n${relay.output().slice(-6000)}`,
      );
    }
  }
}

async function timed<T>(fn: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const t = Date.now();
  const value = await fn();
  return { value, ms: Date.now() - t };
}

it('sheds history reads on a busy reader with the retryable answers; writer-only work stays fast', async () => {
  const c = await RawClient.authed(relay.wsUrl, alice);
  // Healthy first, and served by the replica.
  await waitUntil('replica-served history read', async () => {
    expect((await c.req('warm', { kinds: [1] })).end).toEqual(['EOSE', 'warm']);
    return sample(await metrics(), 'buzz_db_route_decision', 'path="req_historical"', 'decision="replica"') > 0;
  });
  expect((await post('/query', [{ kinds: [1] }])).status).toBe(200);
  expect((await post('/count', [{ kinds: [1] }])).status).toBe(200);

  await withBusyReader(async () => {
    const before = await metrics();
    // The held read's own filter: it shares that read (its proof is within the budget) and is
    // served with it once the lock goes, never shed, never sent to the writer.
    c.send(['REQ', 'joins', { kinds: [1] }]);
    // Any other read needs a permit of its own, and there is none.
    const shedReq = await timed(() => c.req('shed', { kinds: [1], limit: 7 }));
    expect(shedReq.value.end).toEqual(['CLOSED', 'shed', 'error: database error']);
    expect(shedReq.ms).toBeLessThan(2500); // the 1 s permit budget, not a wait on the writer's lock
    c.send(['COUNT', 'shed-count', { kinds: [1] }]);
    expect(await c.waitFor((f) => f[1] === 'shed-count')).toEqual(['CLOSED', 'shed-count', 'error: database error']);
    const [q, n] = await Promise.all([post('/query', [{ kinds: [1] }]), post('/count', [{ kinds: [1] }])]);
    expect([q.status, JSON.parse(q.body)]).toEqual([503, { error: 'database unavailable' }]);
    expect([n.status, JSON.parse(n.body)]).toEqual([503, { error: 'database unavailable' }]);

    // Writer-only work is untouched by the burst.
    const ready = await timed(() => httpRequest(`${relay.httpUrl}/readyz`, { headers: { host: 'localhost' } }));
    expect(ready.value.status).toBe(200);
    expect(ready.ms).toBeLessThan(500);
    const auth = await timed(() => RawClient.authed(relay.wsUrl, newIdentity()));
    expect(auth.ms).toBeLessThan(1000);
    auth.value.close();

    const after = await metrics();
    const d = (...must: string[]) => sample(after, 'buzz_db_route_decision', ...must) - sample(before, 'buzz_db_route_decision', ...must);
    expect(d('decision="rejected"', 'reason="history_read_cap"')).toBe(4);
    expect(d('decision="writer"')).toBe(0); // nothing spilled onto the writer
    const spilled = sample(after, 'buzz_db_reader_spill_total') - sample(before, 'buzz_db_reader_spill_total');
    expect(spilled).toBe(0);
  });
  expect(await c.waitFor((f) => f[1] === 'joins' && (f[0] === 'EOSE' || f[0] === 'CLOSED'), 10_000)).toEqual(['EOSE', 'joins']);
  // Reads are served again.
  expect((await c.req('again', { kinds: [1] })).end).toEqual(['EOSE', 'again']);
  expect((await post('/query', [{ kinds: [1] }])).status).toBe(200);
  c.close();
}, 60_000);

it('shed_history_read_maps_to_503_on_every_bridge_branch', async () => {
  const c = await RawClient.authed(relay.wsUrl, alice);
  const channel = randomUUID();
  expect(await c.publish(alice.sign({ kind: 9007, tags: [['h', channel], ['name', 'shed']] }))).toEqual([true, '']);
  const root = alice.sign({ kind: 9, content: 'root', tags: [['h', channel]] });
  expect(await c.publish(root)).toEqual([true, '']);
  const bob = newIdentity();
  const reply = bob.sign({ kind: 9, content: 'reply', tags: [['h', channel], ['e', root.id, '', 'root'], ['p', alice.pubkey]] });
  const b = await RawClient.authed(relay.wsUrl, bob);
  expect(await b.publish(reply)).toEqual([true, '']);
  b.close();
  await db.waitForReplica();

  const branches: Record<string, unknown[]> = {
    channel_window: [{ top_level: true, '#h': [channel], limit: 20, include_aux: true }],
    mentions: [{ feed_types: ['mentions'], limit: 10 }],
    needs_action: [{ feed_types: ['needs_action'], limit: 10 }],
    activity: [{ feed_types: ['activity'], limit: 10 }],
    thread_replies: [{ '#e': [root.id], depth_limit: 3 }],
  };
  const statuses = async () => {
    const out: Record<string, [number, unknown]> = {};
    await Promise.all(
      Object.entries(branches).map(async ([name, filters]) => {
        const res = await post('/query', filters);
        out[name] = [res.status, res.status === 200 ? 'ok' : JSON.parse(res.body)];
      }),
    );
    return out;
  };
  const ok = Object.fromEntries(Object.keys(branches).map((k) => [k, [200, 'ok']]));
  expect(await statuses()).toEqual(ok);
  // Alice has just written: until the fence proves a heartbeat newer than her writes, her reads
  // go to the writer (read-your-writes), where they would wait on the test's lock until the
  // writer's lock_timeout (55P03, a 500 by the spec's mapping) instead of being shed. A CI run
  // failed that way. So wait until a round of her branches is all served by the replica.
  await waitUntil('alice read from the replica again', async () => {
    const before = await metrics();
    await statuses();
    const after = await metrics();
    const d = (...must: string[]) => sample(after, 'buzz_db_route_decision', ...must) - sample(before, 'buzz_db_route_decision', ...must);
    return d('decision="writer"') === 0 && d('decision="replica"') > 0;
  });
  const shed = await withBusyReader(statuses);
  expect(shed).toEqual(Object.fromEntries(Object.keys(branches).map((k) => [k, [503, { error: 'database unavailable' }]])));
  expect(await statuses()).toEqual(ok);
  c.close();
}, 60_000);
