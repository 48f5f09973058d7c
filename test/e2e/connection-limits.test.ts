/**
 * Connection limits (docs/security.md, "Connection limits and fair shares") through the built
 * relay on a real writer and streaming replica:
 *
 * - per key: the socket past BUZZ_MAX_CONNECTIONS_PER_KEY gets `OK false "rate-limited: …"` at
 *   its AUTH and is closed with the reason; another key is still admitted;
 * - per address: the upgrade past BUZZ_MAX_CONNECTIONS_PER_IP is answered 429 with a plain body
 *   and Retry-After; `X-Forwarded-For` counts only from a proxy in BUZZ_TRUSTED_PROXIES;
 * - the reserve: when one address fills the relay's general places, a client from another address
 *   still gets its AUTH challenge and is served; idle unauthenticated sockets cannot take the
 *   whole reserve either.
 *
 * Clients pick their source address in 127.0.0.0/8 (every such address reaches the loopback relay).
 */
import { newIdentity, RawClient, UpgradeRefused } from '../harness/nostr-clients.js';
import { RelayProcess, startRelay } from '../harness/relay-process.js';
import { createTestDatabase, TestDatabase } from '../harness/test-database.js';
import { metricSum } from '../harness/relay-metrics.js';
import { eventually } from '../harness/eventually.js';

let db: TestDatabase;
const relays: RelayProcess[] = [];
const clients: RawClient[] = [];

async function relayWith(env: Record<string, string>): Promise<RelayProcess> {
  const relay = await startRelay({ DATABASE_URL: db.writerUrl, READ_DATABASE_URL: db.readerUrl ?? '', BUZZ_DEFAULT_COMMUNITY_HOSTS: 'localhost', ...env });
  relays.push(relay);
  return relay;
}

beforeAll(async () => {
  db = await createTestDatabase();
});

afterEach(() => {
  for (const c of clients.splice(0)) c.ws.terminate();
});

afterAll(async () => {
  await Promise.all(relays.map((r) => r.stop()));
  await db?.drop();
});

type Upgrade = { opened: true; client: RawClient } | { opened: false; status: number; body: string; retryAfter: string | undefined };

/** One upgrade attempt: the client once it got its AUTH challenge, or the HTTP refusal. */
async function attempt(url: string, opts: { from?: string; headers?: Record<string, string> } = {}): Promise<Upgrade> {
  try {
    const client = await RawClient.connect(url, opts.headers, opts.from);
    clients.push(client);
    return { opened: true, client };
  } catch (err) {
    if (!(err instanceof UpgradeRefused)) throw err;
    return { opened: false, status: err.status, body: err.body, retryAfter: err.retryAfter };
  }
}

/** An attempt that, once opened, authenticates, so the 5 s AUTH deadline does not free its place. */
async function attemptAuthed(url: string, opts: { from?: string; headers?: Record<string, string> } = {}): Promise<Upgrade> {
  const upgrade = await attempt(url, opts);
  if (!upgrade.opened) return upgrade;
  const ev = newIdentity().sign({ kind: 22242, tags: [['relay', url], ['challenge', upgrade.client.challenge]] });
  upgrade.client.send(['AUTH', ev]);
  expect((await upgrade.client.waitFor((f) => f[0] === 'OK' && f[1] === ev.id))[2]).toBe(true);
  return upgrade;
}

/** Connects and authenticates (kept open until the test ends). */
async function authed(url: string, id = newIdentity(), from?: string): Promise<RawClient> {
  const c = await RawClient.authed(url, id, from);
  clients.push(c);
  return c;
}

/** Connects and sends AUTH; resolves with the relay's OK frame. */
async function authAnswer(url: string, id: ReturnType<typeof newIdentity>): Promise<{ client: RawClient; ok: unknown[] }> {
  const client = await RawClient.connect(url);
  clients.push(client);
  const ev = id.sign({ kind: 22242, tags: [['relay', url], ['challenge', client.challenge]] });
  client.send(['AUTH', ev]);
  return { client, ok: await client.waitFor((f) => f[0] === 'OK' && f[1] === ev.id) };
}

async function served(c: RawClient, id: ReturnType<typeof newIdentity>): Promise<void> {
  const note = id.sign({ kind: 1, content: `served ${Math.random()}` });
  expect(await c.publish(note)).toEqual([true, '']);
  const res = await c.req('mine', { kinds: [1], authors: [id.pubkey], limit: 1 });
  expect(res.end).toEqual(['EOSE', 'mine']);
  expect(res.events.map((e) => e.id)).toEqual([note.id]);
}

describe('per key', () => {
  it("refuses the key's socket past the limit at AUTH with rate-limited and a close naming it; another key is admitted; a closed socket frees its place", async () => {
    const relay = await relayWith({ BUZZ_MAX_CONNECTIONS_PER_KEY: '3' });
    const alice = newIdentity();
    const held = [await authed(relay.wsUrl, alice), await authed(relay.wsUrl, alice), await authed(relay.wsUrl, alice)];
    const fourth = await authAnswer(relay.wsUrl, alice);
    expect(fourth.ok[2]).toBe(false);
    expect(fourth.ok[3]).toBe('rate-limited: too many connections for this key (limit 3)');
    expect(await fourth.client.waitClosed()).toEqual({ code: 1008, reason: 'rate-limited: too many connections for this key' });
    expect(await metricSum(relay.metricsUrl, 'buzz_auth_outcomes_total', { outcome: 'key_connection_limit' })).toBe(1);

    const bob = newIdentity();
    await served(await authed(relay.wsUrl, bob), bob);
    await served(held[0], alice);

    held[2].close();
    await held[2].waitClosed();
    await eventually('the closed socket frees its key place', async () => (await authAnswer(relay.wsUrl, alice)).ok[2] === true);
  });
});

describe('per address', () => {
  it('answers the upgrade past the limit with 429, a plain body and Retry-After, whatever X-Forwarded-For says; another address is admitted', async () => {
    const relay = await relayWith({ BUZZ_MAX_CONNECTIONS_PER_IP: '3' });
    for (let i = 0; i < 3; i++) await authed(relay.wsUrl, newIdentity(), '127.0.0.2');
    const refused = await attempt(relay.wsUrl, { from: '127.0.0.2' });
    expect(refused).toEqual({ opened: false, status: 429, body: 'rate-limited: too many connections from this address (limit 3), retry later', retryAfter: '10' });
    // No proxy is trusted: a forged header does not move the client to another address.
    expect(await attempt(relay.wsUrl, { from: '127.0.0.2', headers: { 'X-Forwarded-For': '203.0.113.9' } })).toEqual(expect.objectContaining({ status: 429 }));
    const other = await attempt(relay.wsUrl, { from: '127.0.0.3' });
    expect(other.opened).toBe(true);
    expect(await metricSum(relay.metricsUrl, 'buzz_ws_upgrades_refused_total', { reason: 'ip_limit' })).toBe(2);

    clients[0].close();
    await clients[0].waitClosed();
    await eventually('the closed socket frees its address place', async () => (await attempt(relay.wsUrl, { from: '127.0.0.2' })).opened);
  });

  it('behind a trusted proxy, counts each client under the address the proxy forwards, and a peer that is not a trusted proxy under its own', async () => {
    const relay = await relayWith({ BUZZ_MAX_CONNECTIONS_PER_IP: '3', BUZZ_TRUSTED_PROXIES: '127.0.0.1' });
    const via = (client: string) => ({ from: '127.0.0.1', headers: { 'X-Forwarded-For': client } });
    for (let i = 0; i < 3; i++) expect((await attemptAuthed(relay.wsUrl, via('198.51.100.1'))).opened).toBe(true);
    expect(await attempt(relay.wsUrl, via('198.51.100.1'))).toEqual(expect.objectContaining({ status: 429 }));
    // A forged first hop does not help: the proxy appends the address it saw.
    expect(await attempt(relay.wsUrl, via('10.9.9.9, 198.51.100.1'))).toEqual(expect.objectContaining({ status: 429 }));
    expect((await attempt(relay.wsUrl, via('198.51.100.2'))).opened).toBe(true);
    // 127.0.0.4 is no trusted proxy: its header is not believed, every socket counts under 127.0.0.4.
    for (let i = 0; i < 3; i++) expect((await attemptAuthed(relay.wsUrl, { from: '127.0.0.4', headers: { 'X-Forwarded-For': `198.51.100.${10 + i}` } })).opened).toBe(true);
    expect(await attempt(relay.wsUrl, { from: '127.0.0.4', headers: { 'X-Forwarded-For': '198.51.100.99' } })).toEqual(expect.objectContaining({ status: 429 }));
  });
});

describe('the reserve', () => {
  it('when one address fills the general places, another address still gets its challenge and is served; unauthenticated sockets cannot take the whole reserve', async () => {
    // 14 places, 6 reserved: one address gets the 8 general places only.
    const relay = await relayWith({ BUZZ_MAX_CONNECTIONS: '14', BUZZ_CONNECTION_RESERVE: '6', BUZZ_MAX_CONNECTIONS_PER_IP: '100' });
    let opened = 0;
    let refusal: Upgrade | undefined;
    for (let i = 0; i < 20 && refusal === undefined; i++) {
      const next = await attemptAuthed(relay.wsUrl, { from: '127.0.0.2' });
      if (next.opened) opened += 1;
      else refusal = next;
    }
    expect(opened).toBe(8);
    expect(refusal).toEqual({ opened: false, status: 503, body: 'relay is full: too many connections, retry later', retryAfter: '5' });

    // Idle sockets that never authenticate, from a second address: a few reserved places, not all.
    const idle: Upgrade[] = [];
    for (let i = 0; i < 5; i++) idle.push(await attempt(relay.wsUrl, { from: '127.0.0.5' }));
    expect(idle.map((u) => u.opened)).toEqual([true, true, true, true, false]);

    const victim = newIdentity();
    const c = await authed(relay.wsUrl, victim, '127.0.0.3');
    await served(c, victim);
    expect(await metricSum(relay.metricsUrl, 'buzz_ws_upgrades_refused_total', { reason: 'capacity' })).toBe(2);
  });
});
