/**
 * The benches' spill baseline (bench/lib/spill-relay.ts, issue 20 item 6) is the relay with seed
 * 000 off, and only there: on a busy one-connection reader its history reads go to the writer
 * (`writer/reader_acquire_timeout`) instead of being shed, where the relay as shipped sheds them
 * (test/history-reads/shed.e2e.test.ts). No environment variable of the relay can do this.
 *
 * The reader is made busy as in the shed test: an ACCESS EXCLUSIVE lock on `events`, taken on the
 * primary and replayed on the standby, holds the relay's one replica read. The spilled read waits
 * on the same lock on the writer, and ends with EOSE once the lock is gone.
 */
import path from 'node:path';
import { Client } from 'pg';
import { createTestDatabase, type TestDatabase } from '../harness/test-database.js';
import { newIdentity, RawClient, httpRequest } from '../harness/nostr-clients.js';
import { type RelayProcess, startRelay } from '../harness/relay-process.js';
import { waitUntil } from '../routing/database-layer.js';

const SPILL_ENTRY = path.resolve(import.meta.dirname, '../../dist/bench/lib/spill-relay.js');

let db: TestDatabase;
let relay: RelayProcess;
let locker: Client;
let replica: Client;

beforeAll(async () => {
  db = await createTestDatabase();
  relay = await startRelay(
    {
      DATABASE_URL: db.writerUrl,
      READ_DATABASE_URL: db.readerUrl,
      BUZZ_DEFAULT_COMMUNITY_HOSTS: 'localhost,127.0.0.1',
      BUZZ_DB_READ_POOL_SIZE: '1',
      BUZZ_REPLICA_READ_MAX_AGE_MS: '10000',
    },
    30_000,
    SPILL_ENTRY,
  );
  locker = new Client({ connectionString: db.writerUrl });
  replica = new Client({ connectionString: db.readerUrl });
  for (const c of [locker, replica]) {
    c.on('error', () => undefined);
    await c.connect();
  }
}, 40_000);

afterAll(async () => {
  await locker?.query('rollback').catch(() => undefined);
  await locker?.end().catch(() => undefined);
  await replica?.end().catch(() => undefined);
  await relay?.stop();
  await db?.drop();
}, 30_000);

async function routes(decision: string, reason?: string): Promise<number> {
  const text = (await httpRequest(relay.metricsUrl, {})).body;
  let total = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith('buzz_db_route_decision{') || !line.includes('path="req_historical"') || !line.includes(`decision="${decision}"`)) continue;
    if (reason === undefined || line.includes(`reason="${reason}"`)) total += Number(line.split(' ').pop());
  }
  return total;
}

it('says at start that history reads spill, and on a busy reader sends them to the writer instead of shedding them', async () => {
  expect(relay.output()).toContain('spill baseline: history reads spill onto the writer');
  const [holder, reader] = [await RawClient.authed(relay.wsUrl, newIdentity()), await RawClient.authed(relay.wsUrl, newIdentity())];
  await waitUntil('a replica-served history read', async () => {
    expect((await reader.req('warm', { kinds: [1] })).end).toEqual(['EOSE', 'warm']);
    return (await routes('replica')) > 0;
  }, 20_000);
  await locker.query('begin');
  await locker.query('lock table events in access exclusive mode');
  try {
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
    holder.send(['REQ', 'holder', { kinds: [1] }]);
    await waitUntil('the relay replica read waiting on the lock', async () => {
      const { rows } = await replica.query(`select 1 from pg_stat_activity where application_name = 'buzz-relay-reader' and wait_event_type = 'Lock'`);
      return rows.length === 1;
    });
    const spilled = await routes('writer', 'reader_acquire_timeout');
    // Not the held read's filter: an identical REQ would share that read (its proof is fresh) and wait with it.
    reader.send(['REQ', 'spilled', { kinds: [1], limit: 7 }]);
    await waitUntil('the read spilled onto the writer', async () => (await routes('writer', 'reader_acquire_timeout')) === spilled + 1);
  } finally {
    await locker.query('rollback');
  }
  expect(await holder.waitFor((f) => f[1] === 'holder' && (f[0] === 'EOSE' || f[0] === 'CLOSED'), 20_000)).toEqual(['EOSE', 'holder']);
  expect(await reader.waitFor((f) => f[1] === 'spilled' && (f[0] === 'EOSE' || f[0] === 'CLOSED'), 20_000)).toEqual(['EOSE', 'spilled']);
  expect(await routes('rejected')).toBe(0);
  holder.close();
  reader.close();
}, 60_000);
