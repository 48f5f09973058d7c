/**
 * Safe defaults of the HTTP side (issue 21, findings 5, 9 and 10), on the real relay:
 * - the `X-Pubkey` development header is ignored by a relay with DATABASE_URL unless the operator
 *   sets BUZZ_REQUIRE_AUTH_TOKEN=false, so nobody reads another key's gift wraps by naming it;
 * - `/metrics` is not served on the public port under any Host, only on the operator listener;
 * - a client that trickles its body or its headers is answered 408 and closed, while a WebSocket
 *   on the same port stays open past those deadlines.
 */
import { connect, Socket } from 'node:net';
import { newIdentity, RawClient } from '../harness/nostr-clients.js';
import { relayEnv, RelayFixture, startRelayFixture } from '../harness/relay-fixture.js';
import { RelayProcess, startRelay } from '../harness/relay-process.js';
import { nip98 } from '../scale-out/scale-out-helpers.js';

/** Short deadlines so the trickle tests end soon; the idle timeout is below the request one. */
const TIMEOUTS = {
  BUZZ_HTTP_REQUEST_TIMEOUT_MS: '1500',
  BUZZ_HTTP_HEADERS_TIMEOUT_MS: '1000',
  BUZZ_HTTP_IDLE_TIMEOUT_MS: '1000',
};
/** One byte per DRIP_MS: far below every deadline above, so only the request deadlines can fire. */
const DRIP_MS = 100;

const alice = newIdentity();
const bob = newIdentity();

let fixture: RelayFixture;
let relay: RelayProcess;
let devRelay: RelayProcess;

beforeAll(async () => {
  fixture = await startRelayFixture(TIMEOUTS);
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
    expect(await res.json()).toMatchObject({ statusCode: 404, error: 'Not Found' });
  });
});

describe('HTTP request deadlines', () => {
  it('answers a client that trickles its body 408 and closes it, while a WebSocket opened before stays open', async () => {
    const ws = await RawClient.authed(relay.wsUrl, alice);
    const body = JSON.stringify([{ kinds: [1], search: 'x'.repeat(170) }]);
    const head = `POST /query HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`;
    const cut = await trickle(relay.port, head, body);
    expect(cut).toEqual({ status: 408, wholeRequestSent: false, closed: true });
    // The body deadline passed on a connection opened after this WebSocket went idle; it still works.
    expect(ws.closed).toBeUndefined();
    const { end } = await ws.req('after', { kinds: [1], limit: 1 });
    expect(end[0]).toBe('EOSE');
    ws.close();
  });

  it('answers a client that trickles its headers 408 and closes it', async () => {
    const cut = await trickle(relay.port, 'GET /healthz HTTP/1.1\r\nHost: localhost\r\n', `X-Slow: ${'a'.repeat(190)}\r\n\r\n`);
    expect(cut).toEqual({ status: 408, wholeRequestSent: false, closed: true });
  });

  it('still serves a request that arrives at normal speed', async () => {
    const res = await rawHttp(relay.port, 'GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n');
    expect(res).toMatch(/^HTTP\/1\.1 200/);
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

/**
 * Sends `head` at once, then `drip` one byte per DRIP_MS until the server closes the socket (or
 * every byte went out: 20 s for 200 bytes, far past the deadlines). Reports the status the server answered with, whether the request was
 * ever complete, and whether the server closed the connection.
 */
function trickle(port: number, head: string, drip: string): Promise<{ status: number | undefined; wholeRequestSent: boolean; closed: boolean }> {
  return new Promise((resolve, reject) => {
    const socket: Socket = connect(port, '127.0.0.1', () => socket.write(head));
    let received = '';
    let sent = 0;
    const timer = setInterval(() => {
      if (socket.destroyed || sent === drip.length) return;
      socket.write(drip[sent++]);
      // Complete: half-close so that a server which let it through answers and closes.
      if (sent === drip.length) socket.end();
    }, DRIP_MS);
    socket.on('data', (d: Buffer) => (received += d.toString()));
    socket.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code !== 'ECONNRESET' && err.code !== 'EPIPE') reject(err);
    });
    socket.on('close', () => {
      clearInterval(timer);
      const status = /^HTTP\/1\.1 (\d{3})/.exec(received)?.[1];
      resolve({ status: status === undefined ? undefined : Number(status), wholeRequestSent: sent === drip.length, closed: true });
    });
  });
}
