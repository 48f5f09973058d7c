/**
 * Scale-out end to end: two relay processes (pods A and B) on one real writer +
 * streaming replica pair and one real redis-server. Cross-pod live delivery
 * exactly once, the access re-check on the receiving pod, presence through
 * Redis and the bridge, shared quotas and the NIP-98 replay set, a Redis restart
 * mid-stream, and SIGTERM with publishes in flight. A last pod, whose Redis is
 * down from the start, shows the fail-closed admission contract.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { getPublicKey, type VerifiedEvent } from 'nostr-tools/pure';
import { Pool } from 'pg';
import { Identity, newIdentity, RawClient } from '../harness/nostr-clients.js';
import { startRedisServer, RedisServer } from '../harness/redis-server.js';
import { relayEnv } from '../harness/relay-fixture.js';
import { RelayProcess, startRelay } from '../harness/relay-process.js';
import { createTestDatabase, TestDatabase } from '../harness/test-database.js';
import { eventually, metric, nip98, query, readiness, synthesisedPresence } from './scale-out-helpers.js';

const RELAY_KEY = randomBytes(32).toString('hex');
const API_CALLS_PER_MIN = 20;
const SETTLE_MS = 400;

let db: TestDatabase;
let redis: RedisServer;
let writer: Pool;
let podA: RelayProcess;
let podB: RelayProcess;
const clients: RawClient[] = [];
const alice = newIdentity();
const bob = newIdentity();
const carol = newIdentity();
const openChannel = randomUUID();

function podEnv(redisUrl: string, extra: Record<string, string> = {}): Record<string, string> {
  return relayEnv(db, {
    BUZZ_REQUIRE_AUTH_TOKEN: 'true',
    BUZZ_REDIS_URL: redisUrl,
    BUZZ_RELAY_PRIVATE_KEY: RELAY_KEY,
    BUZZ_RATE_LIMIT_HUMAN_WS_EVENTS_PER_SEC: '2000',
    BUZZ_RATE_LIMIT_HUMAN_MESSAGES_PER_MIN: '100000',
    BUZZ_RATE_LIMIT_HUMAN_API_CALLS_PER_MIN: String(API_CALLS_PER_MIN),
    ...extra,
  });
}

async function connect(pod: RelayProcess, id: Identity): Promise<RawClient> {
  const client = await RawClient.authed(pod.wsUrl, id);
  clients.push(client);
  return client;
}

const now = () => Math.floor(Date.now() / 1000);
const settle = (ms = SETTLE_MS) => new Promise((r) => setTimeout(r, ms));

function copies(client: RawClient, subId: string, eventId: string): number {
  return client.frames.filter((f) => f[0] === 'EVENT' && f[1] === subId && (f[2] as { id: string }).id === eventId).length;
}

function arrival(client: RawClient, subId: string, eventId: string, timeoutMs = 5000) {
  return client.waitFor((f) => f[0] === 'EVENT' && f[1] === subId && (f[2] as { id: string }).id === eventId, timeoutMs);
}

async function subscribe(client: RawClient, subId: string, filter: object): Promise<void> {
  const { end } = await client.req(subId, { since: now(), ...filter });
  expect(end).toEqual(['EOSE', subId]);
}

function msg(id: Identity, channel: string, content: string): VerifiedEvent {
  return id.sign({ kind: 9, content, tags: [['h', channel]] });
}

async function storedIds(ids: readonly string[]): Promise<Set<string>> {
  const { rows } = await writer.query<{ id: Buffer }>('select id from events where id = any($1::bytea[])', [ids.map((id) => Buffer.from(id, 'hex'))]);
  return new Set(rows.map((r) => r.id.toString('hex')));
}

beforeAll(async () => {
  db = await createTestDatabase();
  writer = new Pool({ connectionString: db.writerUrl, max: 2 });
  writer.on('error', () => undefined);
  redis = await startRedisServer();
  // Both pods fall back to in-process quotas while Redis is down, so the restart test can show
  // each pod still serving its own clients; the fail-closed default is checked by the last pod.
  podA = await startRelay(podEnv(redis.url, { BUZZ_REDIS_FAIL_MODE: 'local' }));
  podB = await startRelay(podEnv(redis.url, { BUZZ_REDIS_FAIL_MODE: 'local' }));
  const a = await connect(podA, alice);
  expect(await a.publish(alice.sign({ kind: 9007, tags: [['h', openChannel], ['name', 'general']] }))).toEqual([true, '']);
}, 120_000);

afterAll(async () => {
  for (const c of clients) c.close();
  await Promise.all([podA?.stop(), podB?.stop()]);
  await redis?.stop();
  await writer?.end();
  await db?.drop();
}, 60_000);

describe('cross-pod live fan-out', () => {
  it('delivers an event accepted on one pod to matching subscriptions on both pods, exactly once', async () => {
    const onA = await connect(podA, alice);
    const onB = await connect(podB, bob);
    await subscribe(onA, 'a', { '#h': [openChannel], kinds: [9] });
    await subscribe(onB, 'b', { '#h': [openChannel], kinds: [9] });
    await subscribe(onB, 'b-global', { kinds: [9] });
    const ownEchoesBefore = await metric(podA, 'buzz_redis_messages_received_total', { outcome: 'own_echo' });
    const fromA = msg(alice, openChannel, 'from pod A');
    const fromB = msg(bob, openChannel, 'from pod B');
    expect(await onA.publish(fromA)).toEqual([true, '']);
    expect(await onB.publish(fromB)).toEqual([true, '']);
    for (const ev of [fromA, fromB]) {
      await arrival(onA, 'a', ev.id);
      await arrival(onB, 'b', ev.id);
    }
    await settle();
    for (const ev of [fromA, fromB]) {
      expect([copies(onA, 'a', ev.id), copies(onB, 'b', ev.id)]).toEqual([1, 1]);
      // Channel events never reach global subscriptions, on any pod.
      expect(copies(onB, 'b-global', ev.id)).toBe(0);
    }
    // Pod A's own publication came back from Redis and was dropped by the local-echo guard.
    expect(await metric(podA, 'buzz_redis_messages_received_total', { outcome: 'own_echo' })).toBeGreaterThan(ownEchoesBefore);
    expect(await metric(podB, 'buzz_multinode_fanout_total')).toBeGreaterThanOrEqual(1);
  });

  it('carries ephemeral typing events across pods once and never stores them', async () => {
    const onA = await connect(podA, alice);
    const onB = await connect(podB, carol);
    await subscribe(onA, 'typing', { '#h': [openChannel], kinds: [20002] });
    const typing = carol.sign({ kind: 20002, tags: [['h', openChannel]] });
    expect(await onB.publish(typing)).toEqual([true, '']);
    await arrival(onA, 'typing', typing.id);
    await settle();
    expect(copies(onA, 'typing', typing.id)).toBe(1);
    expect((await storedIds([typing.id])).size).toBe(0);
  });
});

describe('access re-check on the receiving pod', () => {
  const privateChannel = randomUUID();
  let owner: RawClient;
  let ownerOnB: RawClient;
  let memberOnB: RawClient;
  let outsiderOnB: RawClient;

  beforeAll(async () => {
    owner = await connect(podA, alice);
    expect(await owner.publish(alice.sign({ kind: 9007, tags: [['h', privateChannel], ['name', 'secret'], ['visibility', 'private']] }))).toEqual([true, '']);
    expect(await owner.publish(alice.sign({ kind: 9000, tags: [['h', privateChannel], ['p', bob.pubkey]] }))).toEqual([true, '']);
    ownerOnB = await connect(podB, alice);
    memberOnB = await connect(podB, bob);
    outsiderOnB = await connect(podB, carol);
    await subscribe(ownerOnB, 'owner', { '#h': [privateChannel], kinds: [9] });
    await subscribe(memberOnB, 'member', { '#h': [privateChannel], kinds: [9] });
  });

  it('refuses a non-member on the receiving pod and delivers only to members', async () => {
    const refused = await outsiderOnB.req('outsider', { '#h': [privateChannel], kinds: [9], since: now() });
    expect(refused.end).toEqual(['CLOSED', 'outsider', 'restricted: not a channel member']);
    await subscribe(outsiderOnB, 'outsider-global', { kinds: [9] });
    const secret = msg(alice, privateChannel, 'members only');
    expect(await owner.publish(secret)).toEqual([true, '']);
    await arrival(memberOnB, 'member', secret.id);
    await arrival(ownerOnB, 'owner', secret.id);
    await settle();
    expect(outsiderOnB.frames.filter((f) => f[0] === 'EVENT' && (f[2] as { id: string }).id === secret.id)).toEqual([]);
  });

  it('stops delivering on pod B as soon as the member is removed on pod A, and closes that subscription there', async () => {
    // Pod B has just checked (and cached) the member's access to deliver this one.
    const before = msg(alice, privateChannel, 'before the removal');
    expect(await owner.publish(before)).toEqual([true, '']);
    await arrival(memberOnB, 'member', before.id);
    expect(await owner.publish(alice.sign({ kind: 9001, tags: [['h', privateChannel], ['p', bob.pubkey]] }))).toEqual([true, '']);
    const after = msg(alice, privateChannel, 'after the removal');
    expect(await owner.publish(after)).toEqual([true, '']);
    // The owner's copy on pod B proves the event crossed; the removed member's subscription gets nothing.
    await arrival(ownerOnB, 'owner', after.id);
    await settle();
    expect(copies(memberOnB, 'member', after.id)).toBe(0);
    // Channel eviction (relay.md §2.9) ran on pod B too, from the command event that crossed over Redis.
    expect(memberOnB.frames.filter((f) => f[0] === 'CLOSED' && f[1] === 'member')).toEqual([['CLOSED', 'member', 'restricted: not a channel member']]);
  });
});

describe('shared admission and replay set', () => {
  it('counts HTTP calls of one pubkey across both pods against one quota', async () => {
    const dave = newIdentity();
    const statuses: number[] = [];
    for (let i = 0; i < API_CALLS_PER_MIN; i++) statuses.push((await query(i % 2 === 0 ? podA : podB, dave, [{ kinds: [0], limit: 1 }])).status);
    expect(statuses.every((s) => s === 200)).toBe(true);
    const over = await query(podB, dave, [{ kinds: [0], limit: 1 }]);
    expect(over.status).toBe(429);
    expect((over.body as { error: string }).error).toMatch(/^rate-limited: quota exceeded; retry in \d+s$/);
  });

  it('refuses a NIP-98 header on pod B that was already used on pod A', async () => {
    const erin = newIdentity();
    const body = JSON.stringify([{ kinds: [0], limit: 1 }]);
    const host = `localhost:${podA.port}`;
    const auth = nip98(erin, host, '/query', body);
    expect((await query(podA, erin, JSON.parse(body), { auth })).status).toBe(200);
    expect(await query(podB, erin, JSON.parse(body), { auth, host })).toEqual({ status: 401, body: { error: 'NIP-98: replay detected' } });
  });
});

describe('presence', () => {
  const relayPubkey = getPublicKey(Buffer.from(RELAY_KEY, 'hex'));
  const frank = newIdentity();

  const presenceOf = (pod: RelayProcess, authors?: string[]) => synthesisedPresence(pod, frank, authors);

  it('sets presence on one pod and synthesises it on the other; offline clears it', async () => {
    const onA = await connect(podA, alice);
    const watcherOnB = await connect(podB, carol);
    await subscribe(watcherOnB, 'presence', { kinds: [20001], authors: [alice.pubkey] });
    const away = alice.sign({ kind: 20001, content: JSON.stringify({ status: 'in a meeting' }) });
    expect(await onA.publish(away)).toEqual([true, '']);
    await arrival(watcherOnB, 'presence', away.id);

    const synthesised = await presenceOf(podB, [alice.pubkey, bob.pubkey]);
    expect(synthesised).toHaveLength(1);
    expect(synthesised[0]).toMatchObject({ kind: 20001, pubkey: relayPubkey, content: 'in a meeting', tags: [['p', alice.pubkey]] });
    expect(await presenceOf(podB)).toEqual([]);
    const probe = new Redis(redis.url);
    const [key] = await probe.keys(`buzz:*:presence:${alice.pubkey}`);
    const ttl = await probe.ttl(key);
    await probe.quit();
    expect(ttl).toBeGreaterThan(60);
    expect(ttl).toBeLessThanOrEqual(180);
    expect((await storedIds([away.id])).size).toBe(0);

    expect(await onA.publish(alice.sign({ kind: 20001, content: 'offline' }))).toEqual([true, '']);
    expect(await presenceOf(podB, [alice.pubkey])).toEqual([]);
  });

  it("clears presence when the pubkey's last socket in the community closes", async () => {
    const gina = newIdentity();
    const first = await connect(podB, gina);
    const second = await connect(podB, gina);
    expect(await first.publish(gina.sign({ kind: 20001, content: 'online' }))).toEqual([true, '']);
    expect((await presenceOf(podA, [gina.pubkey])).map((e) => e.content)).toEqual(['online']);
    first.close();
    await first.waitClosed();
    await settle();
    expect((await presenceOf(podA, [gina.pubkey])).map((e) => e.content)).toEqual(['online']);
    second.close();
    await second.waitClosed();
    await eventually('presence cleared', async () => (await presenceOf(podA, [gina.pubkey])).length === 0);
  });
});

describe('Redis restart mid-stream', () => {
  it('keeps each pod serving its own subscribers while Redis is down and resumes cross-pod delivery after', async () => {
    const onA = await connect(podA, alice);
    const onB = await connect(podB, bob);
    const alsoOnB = await connect(podB, carol);
    await subscribe(onA, 'r-a', { '#h': [openChannel], kinds: [9] });
    await subscribe(onB, 'r-b', { '#h': [openChannel], kinds: [9] });

    await redis.kill();
    for (const pod of [podA, podB]) {
      await eventually('redis reported down', async () => (await readiness(pod)).body.redis === 'disconnected');
      expect(await readiness(pod)).toMatchObject({ status: 200, body: { status: 'ready', redis: 'disconnected' } });
    }
    const failuresBefore = await metric(podA, 'buzz_redis_publish_failures_total');
    const duringOnA = msg(alice, openChannel, 'during the outage, pod A');
    expect(await onA.publish(duringOnA)).toEqual([true, '']);
    await arrival(onA, 'r-a', duringOnA.id);
    const duringOnB = msg(carol, openChannel, 'during the outage, pod B');
    expect(await alsoOnB.publish(duringOnB)).toEqual([true, '']);
    await arrival(onB, 'r-b', duringOnB.id);
    expect(await metric(podA, 'buzz_redis_publish_failures_total')).toBeGreaterThan(failuresBefore);
    expect(await metric(podA, 'buzz_redis_connected', { client: 'subscriber' })).toBe(0);
    expect(await metric(podA, 'buzz_admission_local_fallbacks_total', { transport: 'websocket' })).toBeGreaterThan(0);

    await redis.restart();
    for (const pod of [podA, podB]) await eventually('redis reported back', async () => (await readiness(pod)).body.redis === 'connected');
    // The subscriber re-issues its patterns on ready; the first publish may race that by a round trip.
    let after = msg(alice, openChannel, 'after the restart');
    await eventually('cross-pod delivery resumed', async () => {
      after = msg(alice, openChannel, `after the restart ${randomUUID()}`);
      expect(await onA.publish(after)).toEqual([true, '']);
      return arrival(onB, 'r-b', after.id, 1000).then(
        () => true,
        () => false,
      );
    });
    await settle();
    expect([copies(onA, 'r-a', after.id), copies(onB, 'r-b', after.id)]).toEqual([1, 1]);
    expect(await metric(podB, 'buzz_redis_connected', { client: 'subscriber' })).toBe(1);
  });
});

describe('gap fill after a Redis outage', () => {
  it('replays events accepted while Redis was down to the other pod exactly once, re-checking access', async () => {
    const secretChannel = randomUUID();
    const owner = await connect(podA, alice);
    expect(await owner.publish(alice.sign({ kind: 9007, tags: [['h', secretChannel], ['name', 'vault'], ['visibility', 'private']] }))).toEqual([true, '']);
    expect(await owner.publish(alice.sign({ kind: 9000, tags: [['h', secretChannel], ['p', bob.pubkey]] }))).toEqual([true, '']);
    const onA = await connect(podA, carol);
    const onB = await connect(podB, bob);
    const ownerOnB = await connect(podB, alice);
    const outsiderOnB = await connect(podB, carol);
    await subscribe(onA, 'g-a', { '#h': [openChannel], kinds: [9] });
    await subscribe(onB, 'g-b', { '#h': [openChannel], kinds: [9] });
    await subscribe(onB, 'g-member', { '#h': [secretChannel], kinds: [9] });
    await subscribe(ownerOnB, 'g-owner', { '#h': [secretChannel], kinds: [9] });
    await subscribe(outsiderOnB, 'g-global', { kinds: [9] });
    // Pod B has checked (and cached) bob's access to the private channel before the outage.
    const before = msg(alice, secretChannel, 'before the outage');
    expect(await owner.publish(before)).toEqual([true, '']);
    await arrival(onB, 'g-member', before.id);
    const filledOnB = await metric(podB, 'buzz_redis_gap_fill_events_total', { outcome: 'delivered' });
    const skippedOnA = await metric(podA, 'buzz_redis_gap_fill_events_total', { outcome: 'duplicate' });

    await redis.kill();
    for (const pod of [podA, podB]) await eventually('redis reported down', async () => (await readiness(pod)).body.redis === 'disconnected');
    const during = msg(alice, openChannel, 'accepted while Redis was down');
    expect(await owner.publish(during)).toEqual([true, '']);
    await arrival(onA, 'g-a', during.id);
    // Bob leaves the private channel during the outage; pod B never hears of it live.
    expect(await owner.publish(alice.sign({ kind: 9001, tags: [['h', secretChannel], ['p', bob.pubkey]] }))).toEqual([true, '']);
    const secret = msg(alice, secretChannel, 'after bob left, during the outage');
    expect(await owner.publish(secret)).toEqual([true, '']);
    await settle();
    expect(copies(onB, 'g-b', during.id)).toBe(0);

    await redis.restart();
    await arrival(onB, 'g-b', during.id, 20_000);
    await arrival(ownerOnB, 'g-owner', secret.id, 20_000);
    await eventually('pod A gap fill ran', async () => (await metric(podA, 'buzz_redis_gap_fill_events_total', { outcome: 'duplicate' })) > skippedOnA);
    await settle(1000);
    expect([copies(onA, 'g-a', during.id), copies(onB, 'g-b', during.id), copies(ownerOnB, 'g-owner', secret.id)]).toEqual([1, 1, 1]);
    expect(copies(onB, 'g-member', secret.id)).toBe(0);
    expect(outsiderOnB.frames.filter((f) => f[0] === 'EVENT' && (f[2] as { id: string }).id === secret.id)).toEqual([]);
    expect(await metric(podB, 'buzz_redis_gap_fill_events_total', { outcome: 'delivered' })).toBeGreaterThanOrEqual(filledOnB + 3);
  });
});

describe('graceful shutdown', () => {
  it('SIGTERM with publishes in flight: every OK true event is stored and reached the other pod', async () => {
    const hank = newIdentity();
    const publisher = await connect(podA, hank);
    const watcher = await connect(podB, bob);
    await subscribe(watcher, 'drain', { '#h': [openChannel], kinds: [9], authors: [hank.pubkey] });
    const events = Array.from({ length: 300 }, (_, i) => msg(hank, openChannel, `in flight ${i}`));
    const sent = new Set(events.map((e) => e.id));
    const answers = () => publisher.frames.filter((f) => f[0] === 'OK' && sent.has(f[1] as string));
    for (const ev of events) publisher.send(['EVENT', ev]);
    await publisher.waitFor((f) => f[0] === 'OK' && sent.has(f[1] as string), 10_000);
    const answeredAtSignal = answers().length;
    const exit = podA.stop('SIGTERM');
    const closed = await publisher.waitClosed(15_000);
    expect(await exit).toBe(0);
    expect(closed).toEqual({ code: 1012, reason: 'relay restarting' });

    const acknowledged = answers()
      .filter((f) => f[2] === true)
      .map((f) => f[1] as string);
    // The point of the test: SIGTERM arrived while publishes were still unanswered, and the
    // drain answered (at least some of) them before closing.
    expect(answeredAtSignal).toBeLessThan(events.length);
    expect(acknowledged.length).toBeGreaterThan(answeredAtSignal);
    const stored = await storedIds(acknowledged);
    expect(acknowledged.filter((id) => !stored.has(id))).toEqual([]);
    // And the drain answered everything it stored: no event was committed after its socket closed.
    const answered = new Set(answers().map((f) => f[1] as string));
    expect([...(await storedIds([...sent]))].filter((id) => !answered.has(id))).toEqual([]);
    await eventually('every acknowledged event reached pod B', async () => acknowledged.every((id) => copies(watcher, 'drain', id) === 1));
    expect(podA.output()).toContain('shutdown: done');
  });
});

describe('fail closed when Redis is down (default BUZZ_REDIS_FAIL_MODE)', () => {
  let podC: RelayProcess;

  beforeAll(async () => {
    const dead = await startRedisServer();
    await dead.stop(); // its port now refuses connections
    podC = await startRelay(podEnv(dead.url));
  }, 60_000);

  afterAll(() => podC?.stop(), 30_000);

  it('starts and stays ready without Redis, refusing admission with the shared-admission reason', async () => {
    expect(await readiness(podC)).toMatchObject({ status: 200, body: { status: 'ready', redis: 'disconnected' } });
    const c = await connect(podC, alice);
    const ev = msg(alice, openChannel, 'no shared admission');
    expect(await c.publish(ev)).toEqual([false, 'rate-limited: shared admission unavailable']);
    expect((await c.req('q', { kinds: [9] })).end).toEqual(['CLOSED', 'q', 'rate-limited: shared admission unavailable']);
    expect(await query(podC, alice, [{ kinds: [0] }])).toEqual({ status: 503, body: { error: 'rate-limited: shared admission unavailable' } });
    expect(await metric(podC, 'buzz_admission_rejections_total', { reason: 'unavailable' })).toBeGreaterThanOrEqual(3);
    expect((await storedIds([ev.id])).size).toBe(0);
  });
});
