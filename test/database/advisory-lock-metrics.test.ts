/**
 * database.md §6.3 on the built relay and the real pair: advisory-lock waits by `lock_type` and
 * outcome, and the named writer transactions' durations. A lock held by another session until
 * the relay's `lock_timeout` runs out is a `timeout`, and its transaction an `error`.
 */
import { randomUUID } from 'node:crypto';
import { newIdentity, RawClient } from '../harness/nostr-clients.js';
import { type RelayFixture, startRelayFixture } from '../harness/relay-fixture.js';

let f: RelayFixture;

beforeAll(async () => {
  f = await startRelayFixture({ BUZZ_DB_LOCK_TIMEOUT_MS: '300' });
}, 60_000);

afterAll(() => f?.close(), 30_000);

type Labels = Record<string, string>;

/** Sum of the samples of `name` whose labels include `want`, from one scrape of /metrics. */
async function scraped(name: string, want: Labels): Promise<number> {
  const text = await (await fetch(f.relay.metricsUrl)).text();
  let sum = 0;
  for (const line of text.split('\n')) {
    const m = /^(\w+)\{([^}]*)\} (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const labels = Object.fromEntries([...m[2].matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1], x[2]]));
    if (Object.entries(want).every(([k, v]) => labels[k] === v)) sum += Number(m[3]);
  }
  return sum;
}

const locks = (lock_type: string, outcome: string) => scraped('buzz_db_advisory_lock_acquisitions_total', { lock_type, outcome });
const lockWaits = (lock_type: string, outcome: string) => scraped('buzz_db_advisory_lock_wait_seconds_count', { lock_type, outcome });
const transactions = (operation: string, outcome: string) => scraped('buzz_db_transaction_duration_seconds_count', { operation, outcome });

async function communityId(): Promise<string> {
  return (await f.writer.query<{ id: string }>(`select id from communities where host = 'localhost'`)).rows[0].id;
}

describe('advisory locks and named transactions (§6.3)', () => {
  it('replaceable and addressable writes take the replacement lock and time their transactions', async () => {
    const id = newIdentity();
    const c = await RawClient.authed(f.relay.wsUrl, id);
    try {
      const [l0, p0, a0] = [await locks('replacement', 'success'), await transactions('replace_parameterized_event', 'success'), await transactions('replace_addressable_event', 'success')];
      expect(await c.publish(id.sign({ kind: 0, content: '{"name":"a"}' }))).toEqual([true, '']);
      expect(await c.publish(id.sign({ kind: 30023, content: 'article', tags: [['d', 'intro']] }))).toEqual([true, '']);
      expect(await locks('replacement', 'success')).toBe(l0 + 2);
      expect(await lockWaits('replacement', 'success')).toBeGreaterThanOrEqual(2);
      expect(await transactions('replace_parameterized_event', 'success')).toBe(p0 + 1);
      expect(await transactions('replace_addressable_event', 'success')).toBe(a0 + 1);
    } finally {
      c.close();
    }
  }, 30_000);

  it('a coordinate lock held elsewhere past lock_timeout is a timeout, and its transaction an error', async () => {
    const id = newIdentity();
    const c = await RawClient.authed(f.relay.wsUrl, id);
    const holder = await f.writer.connect();
    try {
      const key = `${await communityId()}:${id.pubkey}:0:`; // EventWriteRepository.lockCoordinate's key
      await holder.query('begin');
      await holder.query(`select pg_advisory_xact_lock(hashtextextended($1, 0))`, [key]);
      const [t0, e0, s0] = [await locks('replacement', 'timeout'), await transactions('replace_parameterized_event', 'error'), await locks('replacement', 'success')];
      const [ok] = await c.publish(id.sign({ kind: 0, content: '{"name":"blocked"}' }));
      expect(ok).toBe(false);
      expect(await locks('replacement', 'timeout')).toBe(t0 + 1);
      expect(await lockWaits('replacement', 'timeout')).toBeGreaterThanOrEqual(1);
      expect(await transactions('replace_parameterized_event', 'error')).toBe(e0 + 1);
      expect(await locks('replacement', 'success')).toBe(s0);
      await holder.query('commit');
      expect(await c.publish(id.sign({ kind: 0, content: '{"name":"after"}' }))).toEqual([true, '']);
      expect(await locks('replacement', 'success')).toBe(s0 + 1);
    } finally {
      await holder.query('rollback').catch(() => undefined);
      holder.release();
      c.close();
    }
  }, 30_000);

  it('creating a NIP-29 group refreshes its state under the membership lock', async () => {
    const id = newIdentity();
    const c = await RawClient.authed(f.relay.wsUrl, id);
    try {
      const m0 = await locks('membership', 'success');
      expect(await c.publish(id.sign({ kind: 9007, tags: [['h', randomUUID()], ['name', 'locked']] }))).toEqual([true, '']);
      expect(await locks('membership', 'success')).toBeGreaterThan(m0);
    } finally {
      c.close();
    }
  }, 30_000);
});
