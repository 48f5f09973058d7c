/**
 * Regular event writes against the replica-floor lock (database.md §1.7) on the built relay and
 * the real pair. While a test session holds the lock EXCLUSIVE (as a fence probe does), a channel
 * event is neither stored nor acknowledged, whichever way the writer stores it: as one statement
 * in autocommit (a batch with nothing but events rows) or in a transaction (a batch with mention,
 * ref or thread rows). A global event needs no lock and is stored meanwhile.
 */
import { randomUUID } from 'node:crypto';
import { type VerifiedEvent } from 'nostr-tools/pure';
import { PoolClient } from 'pg';
import { REPLICA_FLOOR_LOCK_KEY_TEXT } from '../../packages/read-path/src/database/constants.js';
import { newIdentity, RawClient } from '../harness/nostr-clients.js';
import { type RelayFixture, startRelayFixture } from '../harness/relay-fixture.js';
import { waitUntil } from '../routing/database-layer.js';

let f: RelayFixture;
const alice = newIdentity();
const bob = newIdentity();
const channel = randomUUID();
let a: RawClient;
let b: RawClient;

beforeAll(async () => {
  // The relay's lock_timeout is lifted so a held lock is waited for, not timed out.
  f = await startRelayFixture({ BUZZ_DB_LOCK_TIMEOUT_MS: '600000' });
  a = await RawClient.authed(f.relay.wsUrl, alice);
  b = await RawClient.authed(f.relay.wsUrl, bob);
  expect(await a.publish(alice.sign({ kind: 9007, tags: [['h', channel], ['name', 'floor']] }))).toEqual([true, '']);
}, 60_000);

afterAll(async () => {
  a?.close();
  b?.close();
  await f?.close();
}, 30_000);

async function stored(ev: VerifiedEvent): Promise<boolean> {
  const { rows } = await f.writer.query('select 1 from events where id = $1', [Buffer.from(ev.id, 'hex')]);
  return rows.length === 1;
}

const okOf = (c: RawClient, ev: VerifiedEvent) => c.frames.find((fr) => fr[0] === 'OK' && fr[1] === ev.id);

/** The text of the statement a writer session runs while it waits for the floor lock shared, if one does. */
async function sharedWaiter(): Promise<string | undefined> {
  const { rows } = await f.writer.query<{ query: string }>(
    `select a.query from pg_locks l join pg_stat_activity a on a.pid = l.pid
      where l.locktype = 'advisory' and not l.granted and l.mode = 'ShareLock' and l.objsubid = 1
        and ((l.classid::bigint << 32) | l.objid::bigint) = $1::bigint`,
    [REPLICA_FLOOR_LOCK_KEY_TEXT],
  );
  return rows[0]?.query;
}

/**
 * Holds the floor lock exclusive, sends `ev` from `c`, and once the relay's write is seen waiting
 * for the lock (or has been acknowledged), publishes a global kind 1 from another client.
 * Returns what held while the lock was held, then commits and waits for `ev`'s OK.
 */
async function underExclusiveLock(c: RawClient, ev: VerifiedEvent) {
  const holder: PoolClient = await f.writer.connect();
  try {
    await holder.query('begin');
    await holder.query('select pg_advisory_xact_lock($1::bigint)', [REPLICA_FLOOR_LOCK_KEY_TEXT]);
    const from = c.frames.length;
    c.send(['EVENT', ev]);
    let waiting: string | undefined;
    await waitUntil('the write waits for the floor lock or is acknowledged', async () => {
      waiting = await sharedWaiter();
      return waiting !== undefined || okOf(c, ev) !== undefined;
    });
    const global = bob.sign({ kind: 1, content: `global while the floor is locked ${randomUUID()}` });
    const globalOk = await b.publish(global);
    const during = { waiting, globalOk, globalStored: await stored(global), ok: okOf(c, ev), stored: await stored(ev) };
    await holder.query('commit');
    const ok = await c.waitFor((fr) => fr[0] === 'OK' && fr[1] === ev.id, 20_000, from);
    return { during, after: { ok: [ok[2], ok[3]], stored: await stored(ev) } };
  } finally {
    await holder.query('rollback').catch(() => undefined);
    holder.release();
  }
}

/** The global event went through while the lock was held; the channel event waited for the commit. */
function expectHeldBack(during: Awaited<ReturnType<typeof underExclusiveLock>>['during'], after: Awaited<ReturnType<typeof underExclusiveLock>>['after']): void {
  expect(during.globalOk).toEqual([true, '']);
  expect(during.globalStored).toBe(true);
  expect(during.ok).toBeUndefined();
  expect(during.stored).toBe(false);
  expect(after).toEqual({ ok: [true, ''], stored: true });
}

describe('channel writes wait for the replica-floor lock', () => {
  it('one statement: a channel event with nothing but its events row is stored and acknowledged only after the exclusive holder commits', async () => {
    // A canvas (40100) in a channel: no thread row, no mention, no e tag.
    const ev = alice.sign({ kind: 40100, content: 'canvas', tags: [['h', channel]] });
    const { during, after } = await underExclusiveLock(a, ev);
    expectHeldBack(during, after);
    // The write that waited was the insert itself, with the lock in its CTE (no BEGIN before it).
    expect(during.waiting).toMatch(/^\s*with floor as materialized \(select pg_advisory_xact_lock_shared\(/);
  }, 60_000);

  it('transaction: a channel event with a mention is stored and acknowledged only after the exclusive holder commits', async () => {
    const ev = alice.sign({ kind: 9, content: 'hi bob', tags: [['h', channel], ['p', bob.pubkey]] });
    const { during, after } = await underExclusiveLock(a, ev);
    expectHeldBack(during, after);
    expect(during.waiting).toMatch(/^\s*select pg_advisory_xact_lock_shared\(/);
    const { rows } = await f.writer.query('select pubkey_hex from event_mentions where event_id = $1', [Buffer.from(ev.id, 'hex')]);
    expect(rows).toEqual([{ pubkey_hex: bob.pubkey }]);
  }, 60_000);
});
