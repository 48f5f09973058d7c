/**
 * Authorization lookups that a reconnect storm repeats are coalesced (issue 17, item 2), on the
 * real writer + replica pair: ban/timeout state, relay membership, the accessible-channel set and
 * its uncached confirmation, tenant resolution.
 *
 * Statements are counted by `buzz_db_pool_acquire_started_total` deltas (each lookup statement
 * takes one writer connection). "Concurrent" is made real by holding an ACCESS EXCLUSIVE lock on
 * the table the lookup reads: the first lookup's statement waits on it, and every later caller
 * arrives (over several event-loop turns) while that statement is in flight. Postgres takes a
 * statement's locks before its snapshot, so a row committed by the lock holder before it
 * releases is seen by the waiting statement.
 */
import { jest } from '@jest/globals';
import { Pool, PoolClient } from 'pg';
import { ChannelAccessService } from '../../src/channels/channel-access.service.js';
import { ChannelRepository } from '../../src/channels/channel.repository.js';
import { BanCache } from '../../src/moderation/ban-cache.js';
import { BanGate } from '../../src/moderation/ban-gate.service.js';
import { ModerationRepository, Restriction } from '../../src/moderation/moderation.repository.js';
import { CommunityRepository } from '../../src/tenancy/community.repository.js';
import { TenancyService } from '../../src/tenancy/tenancy.service.js';
import { newIdentity } from '../harness/nostr-clients.js';
import { createTestDatabase, TestDatabase } from '../harness/test-database.js';
import { adminPool, DatabaseLayer, metricValue, startDatabaseLayer, waitUntil } from '../routing/database-layer.js';

/** Long enough that a held lock outlives the joins, short enough for the failure case. */
const LOCK_TIMEOUT_MS = 2000;

let db: TestDatabase;
let layer: DatabaseLayer;
let admin: Pool;
let moderation: ModerationRepository;
let channels: ChannelRepository;
let communityId: string;

beforeAll(async () => {
  db = await createTestDatabase();
  layer = await startDatabaseLayer(db, { BUZZ_DB_LOCK_TIMEOUT_MS: String(LOCK_TIMEOUT_MS) });
  admin = adminPool(db.writerUrl);
  ({ rows: [{ id: communityId }] } = await admin.query<{ id: string }>(`insert into communities (host, name) values ('storm.test', 'storm') returning id`));
  moderation = new ModerationRepository(layer.database, layer.routed);
  channels = new ChannelRepository(layer.routed);
});

afterAll(async () => {
  await admin?.end();
  await layer?.close();
  await db?.drop();
});

const statements = (operation: string) => metricValue('buzz_db_pool_acquire_started_total', { pool_role: 'writer', operation });
const turn = () => new Promise((r) => setImmediate(r));

/** A transaction holding `table` in ACCESS EXCLUSIVE mode until `release` (commit) or `abort`. */
async function holdLock(table: string): Promise<{ client: PoolClient; release(): Promise<void> }> {
  const client = await admin.connect();
  await client.query('begin');
  await client.query(`lock table ${table} in access exclusive mode`);
  return {
    client,
    release: async () => {
      await client.query('commit');
      client.release();
    },
  };
}

/** Resolves once `n` statements wait for a lock on `table` (outcome, not time). */
function lockWaiters(table: string, n: number): Promise<void> {
  return waitUntil(`${n} statement(s) waiting on ${table}`, async () => {
    const { rows } = await admin.query<{ n: number }>(`select count(*)::int as n from pg_locks where not granted and relation = $1::regclass`, [table]);
    return rows[0].n >= n;
  });
}

/** `count` calls of `call`, spread over several event-loop turns (not one synchronous burst). */
async function spread<T>(count: number, call: () => Promise<T>): Promise<Array<Promise<T>>> {
  const out: Array<Promise<T>> = [];
  for (let i = 0; i < count; i++) {
    out.push(call());
    if (i % 5 === 4) await turn();
  }
  return out;
}

async function insertBan(client: Pool | PoolClient, pubkey: string): Promise<void> {
  await client.query(`insert into bans (community_id, pubkey) values ($1, $2)`, [communityId, pubkey]);
}

describe('ban and timeout state (never cached)', () => {
  it('many concurrent lookups of one key cost one statement, and see a ban committed while it waited', async () => {
    const mallory = newIdentity().pubkey;
    const gate = new BanGate(moderation, new BanCache({ banRecheckMs: 5000 }));
    const before = await statements('authentication');
    const lock = await holdLock('bans');
    const first = moderation.restrictionOf(communityId, mallory);
    await lockWaiters('bans', 1);
    const rest = await spread(40, () => moderation.restrictionOf(communityId, mallory));
    const viaGate = gate.isBanned(communityId, mallory);
    await insertBan(lock.client, mallory);
    await lock.release();

    const answers = await Promise.all([first, ...rest]);
    expect(new Set(answers.map((a) => a.kind))).toEqual(new Set(['banned']));
    expect(await viaGate).toBe(true);
    expect((await statements('authentication')) - before).toBe(1);
  });

  it('does not merge different keys: each gets its own answer, in a bounded number of statements', async () => {
    const [alice, bob, carol, dave] = [newIdentity().pubkey, newIdentity().pubkey, newIdentity().pubkey, newIdentity().pubkey];
    await insertBan(admin, alice);
    await admin.query(`insert into timeouts (community_id, pubkey, until) values ($1, $2, now() + interval '1 hour')`, [communityId, carol]);
    const before = await statements('authentication');
    const lock = await holdLock('bans');
    const a = moderation.restrictionOf(communityId, alice);
    await lockWaiters('bans', 1);
    // Bob and Carol in one turn share the second slot's statement; Dave queues behind both slots.
    const [b, c] = [moderation.restrictionOf(communityId, bob), moderation.restrictionOf(communityId, carol)];
    await lockWaiters('bans', 2);
    const d = moderation.restrictionOf(communityId, dave);
    await turn();
    await lock.release();

    const got = await Promise.all([a, b, c, d]);
    expect(got.map((r) => r.kind)).toEqual(['banned', 'none', 'timed_out', 'none']);
    expect((got[2] as Extract<Restriction, { kind: 'timed_out' }>).untilSecs).toBeGreaterThan(Date.now() / 1000);
    expect((await statements('authentication')) - before).toBe(3);
  });

  it('a failed lookup fails every waiter with its error, is not cached, and the next caller reads again', async () => {
    const erin = newIdentity().pubkey;
    const lock = await holdLock('bans');
    const waiters = (await spread(10, () => moderation.restrictionOf(communityId, erin))).map((p) => p.then(() => undefined, (e: unknown) => e));
    const errors = await Promise.all(waiters);
    await lock.release();
    expect((errors[0] as { code?: string }).code).toBe('55P03'); // lock_timeout
    for (const e of errors) expect(e).toBe(errors[0]);

    const before = await statements('authentication');
    expect(await moderation.restrictionOf(communityId, erin)).toEqual({ kind: 'none' });
    expect((await statements('authentication')) - before).toBe(1);
  });

  it('a ban inserted after a coalesced answer takes effect at the next lookup', async () => {
    const frank = newIdentity().pubkey;
    const answers = await Promise.all(Array.from({ length: 20 }, () => moderation.restrictionOf(communityId, frank)));
    expect(new Set(answers.map((a) => a.kind))).toEqual(new Set(['none']));
    await insertBan(admin, frank);
    expect(await moderation.restrictionOf(communityId, frank)).toEqual({ kind: 'banned' });
    expect(await new BanGate(moderation, new BanCache({ banRecheckMs: 5000 })).isBanned(communityId, frank)).toBe(true);
  });
});

describe('relay membership and the allowlist (never cached)', () => {
  it('concurrent lookups of one key share one statement; different keys keep their own answers', async () => {
    const [member, stranger] = [newIdentity().pubkey, newIdentity().pubkey];
    await admin.query(`insert into relay_members (community_id, pubkey, role) values ($1, $2, 'member')`, [communityId, member]);
    const before = await statements('authorization');
    const lock = await holdLock('relay_members');
    const first = moderation.isRelayMember(communityId, member);
    await lockWaiters('relay_members', 1);
    const rest = await spread(30, () => moderation.isRelayMember(communityId, member));
    await lock.release();
    expect(new Set(await Promise.all([first, ...rest]))).toEqual(new Set([true]));
    expect((await statements('authorization')) - before).toBe(1);

    expect(await Promise.all([moderation.isRelayMember(communityId, member), moderation.isRelayMember(communityId, stranger)])).toEqual([true, false]);
    // Revoked membership is seen at once: nothing was cached.
    await admin.query(`delete from relay_members where community_id = $1 and pubkey = $2`, [communityId, member]);
    expect(await moderation.isRelayMember(communityId, member)).toBe(false);
  });

  it('allowlist lookups answer per key', async () => {
    const [listed, unlisted] = [newIdentity().pubkey, newIdentity().pubkey];
    await admin.query(`insert into pubkey_allowlist (community_id, pubkey) values ($1, $2)`, [communityId, listed]);
    const got = await Promise.all([listed, unlisted, listed].map((p) => moderation.isAllowlisted(communityId, p)));
    expect(got).toEqual([true, false, true]);
  });
});

describe('channel access (10 s cache, uncached confirmation)', () => {
  let open: string;
  let secret: string;

  beforeAll(async () => {
    const { rows } = await admin.query<{ id: string }>(
      `insert into channels (community_id, id, name, visibility, channel_type, created_by)
       values ($1, gen_random_uuid(), 'open', 'open', 'stream', 'x'), ($1, gen_random_uuid(), 'secret', 'private', 'stream', 'x') returning id`,
      [communityId],
    );
    [open, secret] = rows.map((r) => r.id);
  });

  const join = (pubkey: string) => admin.query(`insert into channel_members (community_id, channel_id, pubkey, role) values ($1, $2, $3, 'member')`, [communityId, secret, pubkey]);

  it('members asking at once share statements (one key in flight, then one batch of the others); each gets its own set', async () => {
    const access = new ChannelAccessService(channels);
    const members = Array.from({ length: 5 }, () => newIdentity().pubkey);
    const outsiders = Array.from({ length: 5 }, () => newIdentity().pubkey);
    for (const m of members) await join(m);
    const before = await statements('authorization');
    const lock = await holdLock('channels');
    const first = access.accessible(communityId, members[0]);
    await lockWaiters('channels', 1);
    // The same key again (joins the statement in flight) and nine other keys (one batch).
    const again = await spread(20, () => access.accessible(communityId, members[0]));
    const others = [...members.slice(1), ...outsiders].map((p) => access.accessible(communityId, p));
    await turn();
    await lock.release();

    for (const s of await Promise.all([first, ...again, ...others.slice(0, 4)])) expect([...s].sort()).toEqual([open, secret].sort());
    for (const s of await Promise.all(others.slice(4))) expect([...s]).toEqual([open]);
    expect((await statements('authorization')) - before).toBe(2);
    // Cached now: no statement for a repeat.
    await access.accessible(communityId, members[3]);
    expect((await statements('authorization')) - before).toBe(2);
  });

  it('a failed load fails every waiter, is not cached, and the next caller loads again', async () => {
    const access = new ChannelAccessService(channels);
    const gina = newIdentity().pubkey;
    const lock = await holdLock('channels');
    const errors = await Promise.all((await spread(10, () => access.accessible(communityId, gina))).map((p) => p.then(() => undefined, (e: unknown) => e)));
    await lock.release();
    expect((errors[0] as { code?: string }).code).toBe('55P03');
    for (const e of errors) expect(e).toBe(errors[0]);
    expect([...(await access.accessible(communityId, gina))]).toEqual([open]);
  });

  it('the uncached confirmation of a cache miss is coalesced and sees a membership the cache lacks', async () => {
    const access = new ChannelAccessService(channels);
    const hank = newIdentity().pubkey;
    expect([...(await access.accessible(communityId, hank))]).toEqual([open]); // cached without `secret`
    await join(hank); // committed elsewhere: no invalidation reaches this cache
    const before = await statements('authorization');
    const lock = await holdLock('channel_members');
    const first = access.authorize(communityId, hank, [secret]);
    await lockWaiters('channel_members', 1);
    const rest = await spread(20, () => access.authorize(communityId, hank, [secret, open]));
    await lock.release();
    expect(await first).toEqual([secret]);
    for (const r of await Promise.all(rest)) expect(r).toEqual([secret, open]);
    expect((await statements('authorization')) - before).toBe(1);
  });

  it('a load an invalidation overtakes answers its callers but neither fills the cache nor serves later callers', async () => {
    const access = new ChannelAccessService(channels);
    const ivy = newIdentity().pubkey;
    // Hold the first load's answer (read before Ivy joins) until the test lets it through.
    const real = channels.accessibleIdsAmong.bind(channels);
    let letThrough!: () => void;
    const held = new Promise<void>((r) => (letThrough = r));
    const spy = jest.spyOn(channels, 'accessibleIdsAmong').mockImplementationOnce(async (pairs) => {
      const answer = await real(pairs);
      await held;
      return answer;
    });
    try {
      const stale = access.accessible(communityId, ivy);
      await waitUntil('the first load to have read', () => spy.mock.calls.length === 1);
      await join(ivy);
      access.invalidate(communityId, ivy); // what ingest does after the join commits
      expect([...(await access.accessible(communityId, ivy))].sort()).toEqual([open, secret].sort());
      letThrough();
      expect([...(await stale)]).toEqual([open]);
      expect([...(await access.accessible(communityId, ivy))].sort()).toEqual([open, secret].sort());
    } finally {
      letThrough();
      spy.mockRestore();
    }
  }, 15_000); // a caller that joined the held load would wait for it: fail, do not hang
});

describe('tenant resolution', () => {
  it('concurrent misses for one host share one lookup; another host gets its own; an unknown host is not cached', async () => {
    const tenancy = new TenancyService(new CommunityRepository(layer.database, layer.routed));
    await admin.query(`insert into communities (host, name) values ('other.test', 'other')`);
    const before = await statements('tenant_resolution');
    const lock = await holdLock('communities');
    const first = tenancy.resolve('storm.test');
    await lockWaiters('communities', 1);
    const rest = await spread(30, () => tenancy.resolve('storm.test'));
    const other = tenancy.resolve('other.test');
    await lock.release();
    for (const r of await Promise.all([first, ...rest])) expect(r).toMatchObject({ ok: true, community: { id: communityId } });
    expect(await other).toMatchObject({ ok: true, community: { host: 'other.test' } });
    expect((await statements('tenant_resolution')) - before).toBe(2);

    expect(await tenancy.resolve('late.test')).toEqual({ ok: false, reason: 'unknown_host' });
    await admin.query(`insert into communities (host, name) values ('late.test', 'late')`);
    expect(await tenancy.resolve('late.test')).toMatchObject({ ok: true, community: { host: 'late.test' } });
  });
});
