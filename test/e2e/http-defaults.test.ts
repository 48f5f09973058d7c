/**
 * Safe defaults of the HTTP side (issue 21, findings 5 and 9), on the real relay:
 * - the `X-Pubkey` development header is ignored by a relay with DATABASE_URL unless the operator
 *   sets BUZZ_REQUIRE_AUTH_TOKEN=false, so nobody reads another key's gift wraps by naming it;
 * - `/metrics` is not served on the public port under any Host, only on the operator listener.
 */
import { connect } from 'node:net';
import { newIdentity, RawClient } from '../harness/nostr-clients.js';
import { relayEnv, RelayFixture, startRelayFixture } from '../harness/relay-fixture.js';
import { RelayProcess, startRelay } from '../harness/relay-process.js';
import { nip98 } from '../scale-out/scale-out-helpers.js';

const alice = newIdentity();
const bob = newIdentity();

let fixture: RelayFixture;
let relay: RelayProcess;
let devRelay: RelayProcess;

beforeAll(async () => {
  fixture = await startRelayFixture();
  relay = fixture.relay;
  devRelay = await startRelay(relayEnv(fixture.db, { BUZZ_REQUIRE_AUTH_TOKEN: 'false' }));
});

afterAll(async () => {
  await devRelay?.stop();
  await fixture?.close();
});

async function postQuery(target: RelayProcess, headers: Record<string, string>, filters: unknown): Promise<{ status: number; body: unknown }> {
  const res = await fetch(`${target.httpUrl}/query`, { method: 'POST', headers, body: JSON.stringify(filters) });
  return { status: res.status, body: await res.json() };
}

describe('X-Pubkey development header', () => {
  const wrapsForBob = [{ kinds: [1059], '#p': [bob.pubkey] }];
  let wrapId: string;

  beforeAll(async () => {
    const a = await RawClient.authed(relay.wsUrl, alice);
    const wrap = alice.sign({ kind: 1059, content: 'sealed for bob', tags: [['p', bob.pubkey]] });
    expect(await a.publish(wrap)).toEqual([true, '']);
    wrapId = wrap.id;
    a.close();
  });

  it('is refused by default on a relay with DATABASE_URL: naming bob does not read his gift wraps', async () => {
    expect(await postQuery(relay, { 'x-pubkey': bob.pubkey }, wrapsForBob)).toEqual({ status: 401, body: { error: 'missing Nostr auth' } });
    expect(relay.output()).not.toContain('trusts the X-Pubkey header');
  });

  it('leaves NIP-98 working there: bob signing for himself reads them', async () => {
    const body = JSON.stringify(wrapsForBob);
    const host = `localhost:${relay.port}`;
    const res = await fetch(`${relay.httpUrl}/query`, { method: 'POST', headers: { host, authorization: nip98(bob, host, '/query', body) }, body });
    expect(res.status).toBe(200);
    expect(((await res.json()) as Array<{ id: string }>).map((e) => e.id)).toEqual([wrapId]);
  });

  it('is honoured when the operator sets BUZZ_REQUIRE_AUTH_TOKEN=false, with a warning at start', async () => {
    const res = await postQuery(devRelay, { 'x-pubkey': bob.pubkey }, wrapsForBob);
    expect(res.status).toBe(200);
    expect((res.body as Array<{ id: string }>).map((e) => e.id)).toEqual([wrapId]);
    expect(devRelay.output()).toContain('BUZZ_REQUIRE_AUTH_TOKEN=false: the HTTP bridge trusts the X-Pubkey header from any client');
  });
});

describe('/metrics', () => {
  it.each(['localhost', '127.0.0.1', 'localhost:1', 'unknown.example'])('is not served on the public port with Host %j', async (host) => {
    const res = await rawHttp(relay.port, `GET /metrics HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
    expect(res).not.toMatch(/^HTTP\/1\.1 200/);
    expect(res).not.toContain('buzz_ws_connections');
  });

  it('is served on the operator listener, on loopback by default', async () => {
    expect(new URL(relay.metricsUrl).hostname).toBe('127.0.0.1');
    const res = await fetch(relay.metricsUrl);
    expect(res.status).toBe(200);
    expect(await res.text()).toMatch(/^buzz_ws_connections_active \d+$/m);
  });

  it('serves nothing else on the operator listener', async () => {
    const res = await fetch(new URL('/readyz', relay.metricsUrl));
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ error: 'not found: only GET /metrics is served here' });
  });
});

/** Sends `request` at once and returns everything the server wrote before closing. */
function rawHttp(port: number, request: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.end(request));
    let received = '';
    socket.on('data', (d: Buffer) => (received += d.toString()));
    socket.on('error', reject);
    socket.on('close', () => resolve(received));
  });
}
