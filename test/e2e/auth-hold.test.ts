/**
 * Clients as they are (issue 18, item 6), on the built relay and the real writer + replica pair:
 * frames sent before AUTH lands wait for its outcome (BUZZ_AUTH_HOLD_FRAMES/_BYTES) and run in
 * order once it succeeds; frames past the bounds, or still held when AUTH fails or the deadline
 * passes, get the usual `auth-required:` refusals. A client that sends no AUTH at all gets them
 * once the grace (BUZZ_AUTH_HOLD_GRACE_MS) has passed, and the close at the deadline says why. A
 * client that opens a dozen subscriptions on connect gets them all
 * (BUZZ_RATE_LIMIT_HUMAN_WS_BURST); a flood is still rate-limited, with the counters in process
 * and in Redis.
 */
import { finalizeEvent } from 'nostr-tools/pure';
import { randomUUID } from 'node:crypto';
import { Relay } from 'nostr-tools/relay';
import { AUTH_TIMEOUT_CLOSE_CODE } from '../../src/subscriptions/relay.gateway.js';
import { authTemplate, Frame, Identity, newIdentity, RawClient } from '../harness/nostr-clients.js';
import { relayEnv, RelayFixture, startRelayFixture } from '../harness/relay-fixture.js';
import { RelayProcess, startRelay } from '../harness/relay-process.js';
import { RedisServer, startRedisServer } from '../harness/redis-server.js';

let fixture: RelayFixture;
let tight: RelayProcess;
const clients: RawClient[] = [];

beforeAll(async () => {
  // The default quotas (10 frames/s, burst 30) and hold (30 frames, 256 KiB).
  fixture = await startRelayFixture({ BUZZ_RATE_LIMIT_HUMAN_MESSAGES_PER_MIN: '1000' });
  tight = await startRelay(relayEnv(fixture.db, { BUZZ_AUTH_HOLD_FRAMES: '3', BUZZ_AUTH_HOLD_BYTES: '4096' }));
});

afterAll(async () => {
  for (const c of clients) c.close();
  await tight?.stop();
  await fixture?.close();
});

async function connect(url: string): Promise<RawClient> {
  const c = await RawClient.connect(url);
  clients.push(c);
  return c;
}

function sendAuth(c: RawClient, url: string, id: Identity): string {
  const auth = finalizeEvent(authTemplate(c.challenge, url), id.sk);
  c.send(['AUTH', auth]);
  return auth.id;
}

const endOf = (subId: string) => (f: Frame) => (f[0] === 'EOSE' || f[0] === 'CLOSED') && f[1] === subId;

describe('frames sent before AUTH', () => {
  it('run in order once AUTH succeeds: history, the published event live, its OK', async () => {
    const alice = newIdentity();
    const url = fixture.relay.wsUrl;
    const setup = await RawClient.authed(url, alice);
    clients.push(setup);
    const channel = randomUUID();
    expect(await setup.publish(alice.sign({ kind: 9007, tags: [['h', channel], ['name', 'held'], ['visibility', 'private']] }))).toEqual([true, '']);
    const old = alice.sign({ kind: 9, content: 'before', tags: [['h', channel]] });
    expect(await setup.publish(old)).toEqual([true, '']);

    const c = await connect(url);
    const fresh = alice.sign({ kind: 9, content: 'on connect', tags: [['h', channel]] });
    c.send(['REQ', 'chat', { kinds: [9], '#h': [channel] }]);
    c.send(['EVENT', fresh]);
    c.send(['COUNT', 'n', { kinds: [9], '#h': [channel] }]);
    await new Promise((r) => setTimeout(r, 200));
    // Nothing is answered while AUTH has not arrived.
    expect(c.frames.filter((f) => f[0] !== 'AUTH')).toEqual([]);
    const authId = sendAuth(c, url, alice);

    await c.waitFor((f) => f[0] === 'EVENT' && f[1] === 'chat' && (f[2] as { id: string }).id === fresh.id);
    expect(await c.waitFor((f) => f[0] === 'OK' && f[1] === fresh.id)).toEqual(['OK', fresh.id, true, '']);
    // EVENT and COUNT run as concurrent tasks once released: the count sees the stored history.
    const count = await c.waitFor((f) => (f[0] === 'COUNT' || f[0] === 'CLOSED') && f[1] === 'n');
    expect(count).toEqual(['COUNT', 'n', { count: expect.any(Number) }]);
    expect((count[2] as { count: number }).count).toBeGreaterThanOrEqual(1);
    // The history read and the EVENT's ingest run concurrently too: the order is checked once both ended.
    await c.waitFor((f) => f[0] === 'EOSE' && f[1] === 'chat');
    const kinds = c.frames.map((f) => `${f[0]}:${f[0] === 'EVENT' ? (f[2] as { content: string }).content : f[1] === authId ? 'auth' : String(f[1])}`);
    // The AUTH answer comes first; the held REQ's history (and EOSE) before the event it then sees live.
    expect(kinds.indexOf(`OK:auth`)).toBeLessThan(kinds.indexOf('EVENT:before'));
    expect(kinds.indexOf('EVENT:before')).toBeLessThan(kinds.indexOf('EOSE:chat'));
    expect(kinds.filter((k) => k.startsWith('CLOSED') || k.startsWith('NOTICE'))).toEqual([]);
  });

  it('past the count bound: the extra frames are refused at once, the held ones run after AUTH', async () => {
    const bob = newIdentity();
    const c = await connect(tight.wsUrl);
    for (const sub of ['a', 'b', 'c', 'd', 'e']) c.send(['REQ', sub, { kinds: [1], limit: 1 }]);
    expect(await c.waitFor(endOf('d'))).toEqual(['CLOSED', 'd', 'auth-required: not authenticated']);
    expect(await c.waitFor(endOf('e'))).toEqual(['CLOSED', 'e', 'auth-required: not authenticated']);
    expect(c.frames.some((f) => f[1] === 'a' || f[1] === 'b' || f[1] === 'c')).toBe(false);
    sendAuth(c, tight.wsUrl, bob);
    for (const sub of ['a', 'b', 'c']) expect(await c.waitFor(endOf(sub))).toEqual(['EOSE', sub]);
  });

  it('past the byte bound: a large EVENT is refused at once; a later CLOSE supersedes a held REQ', async () => {
    const bob = newIdentity();
    const c = await connect(tight.wsUrl);
    c.send(['REQ', 'kept', { kinds: [1], limit: 1 }]);
    c.send(['REQ', 'gone', { kinds: [1], limit: 1 }]);
    const big = bob.sign({ kind: 1, content: 'x'.repeat(5000) });
    c.send(['EVENT', big]);
    expect(await c.waitFor((f) => f[0] === 'OK' && f[1] === big.id)).toEqual(['OK', big.id, false, 'auth-required: not authenticated']);
    // The hold has room for one more frame; the second CLOSE does not fit and is answered now.
    c.send(['CLOSE', 'other']);
    c.send(['CLOSE', 'gone']);
    expect(await c.waitFor((f) => f[0] === 'CLOSED' && f[1] === 'gone')).toEqual(['CLOSED', 'gone', '']);
    sendAuth(c, tight.wsUrl, bob);
    expect(await c.waitFor(endOf('kept'))).toEqual(['EOSE', 'kept']);
    await c.waitFor((f) => f[0] === 'CLOSED' && f[1] === 'other');
    // The superseded REQ never ran: no subscription the client closed comes back to life.
    expect(c.frames.filter((f) => f[1] === 'gone')).toEqual([['CLOSED', 'gone', '']]);
  });

});

describe('a client that does not answer the challenge (no auth handler)', () => {
  it('gets the usual refusals once the grace passes, on an open socket that may still AUTH and be served', async () => {
    const c = await connect(fixture.relay.wsUrl);
    const ev = newIdentity().sign({ kind: 1, content: 'never authenticated' });
    c.send(['REQ', 'late', { kinds: [1] }]);
    c.send(['EVENT', ev]);
    expect(await c.waitFor(endOf('late'), 10_000)).toEqual(['CLOSED', 'late', 'auth-required: not authenticated']);
    expect(await c.waitFor((f) => f[0] === 'OK', 10_000)).toEqual(['OK', ev.id, false, 'auth-required: not authenticated']);
    expect(c.frames).toContainEqual(['NOTICE', 'auth-required: authenticate before subscribing']);
    // After the grace a frame is answered at once, not held.
    c.send(['COUNT', 'n', { kinds: [1] }]);
    expect(await c.waitFor((f) => f[1] === 'n', 10_000)).toEqual(['CLOSED', 'n', 'auth-required: not authenticated']);
    // The refusals came before the AUTH deadline: the socket is open and an AUTH still counts,
    // and a REQ sent right behind it waits for its outcome.
    const authId = sendAuth(c, fixture.relay.wsUrl, newIdentity());
    c.send(['REQ', 'now', { kinds: [1], limit: 1 }]);
    expect(await c.waitFor((f) => f[0] === 'OK' && f[1] === authId)).toEqual(['OK', authId, true, '']);
    expect(await c.waitFor(endOf('now'))).toEqual(['EOSE', 'now']);
  });

  it('nostr-tools Relay without onauth: the publish fails with the auth-required reason, not its timeout', async () => {
    const relay = await Relay.connect(fixture.relay.wsUrl);
    try {
      const closed = new Promise<string>((resolve) => relay.subscribe([{ kinds: [1], limit: 1 }], { onevent: () => undefined, onclose: resolve }));
      const ev = newIdentity().sign({ kind: 1, content: 'no auth handler' });
      await expect(relay.publish(ev)).rejects.toThrow('auth-required: not authenticated');
      expect(await closed).toBe('auth-required: not authenticated');
    } finally {
      relay.close();
    }
  });

  it('is closed at the AUTH deadline with a code and a reason', async () => {
    const c = await connect(fixture.relay.wsUrl);
    await waitClosed(c);
    expect(c.closed).toEqual({ code: AUTH_TIMEOUT_CLOSE_CODE, reason: 'auth-required: not authenticated within 5 s' });
  });
});

async function waitClosed(c: RawClient): Promise<void> {
  for (let i = 0; i < 200 && !c.closed; i++) await new Promise((r) => setTimeout(r, 50));
  expect(c.closed).toBeDefined();
}

/** Sends n REQs at once and collects each one's end (EOSE or CLOSED reason). */
async function reqBurst(c: RawClient, prefix: string, n: number): Promise<Frame[]> {
  const subs = Array.from({ length: n }, (_, i) => `${prefix}${i}`);
  for (const sub of subs) c.send(['REQ', sub, { kinds: [1], limit: 1 }]);
  return Promise.all(subs.map((sub) => c.waitFor(endOf(sub), 15_000)));
}

describe.each([
  ['in process', false],
  ['shared through Redis', true],
])('the WebSocket quota (%s)', (_label, shared) => {
  let redis: RedisServer | undefined;
  let relay: RelayProcess;

  beforeAll(async () => {
    if (shared) redis = await startRedisServer();
    relay = shared ? await startRelay(relayEnv(fixture.db, { BUZZ_REDIS_URL: redis!.url })) : fixture.relay;
  });

  afterAll(async () => {
    if (shared) await relay?.stop();
    await redis?.stop();
  });

  it('admits a dozen subscriptions opened on connect, and still limits a flood', async () => {
    const carol = newIdentity();
    const c = await connect(relay.wsUrl);
    const onConnect = Array.from({ length: 12 }, (_, i) => `open${i}`);
    for (const sub of onConnect) c.send(['REQ', sub, { kinds: [1], limit: 1 }]);
    sendAuth(c, relay.wsUrl, carol);
    const ends = await Promise.all(onConnect.map((sub) => c.waitFor(endOf(sub), 15_000)));
    expect(ends).toEqual(onConnect.map((sub) => ['EOSE', sub]));

    const flood = await reqBurst(c, 'flood', 80);
    const limited = flood.filter((f) => f[0] === 'CLOSED');
    expect(limited.length).toBeGreaterThan(0);
    for (const f of limited) expect(f[2]).toMatch(/^rate-limited: quota exceeded; retry in \d+s$/);
  });
});
