/**
 * The `Host` header binds the tenant (issue 28, finding 9), so the relay reads it the way a
 * strict proxy would, on the HTTP bridge and the WebSocket upgrade alike: a Host with userinfo
 * (`localhost:33000@other.test`) or sent twice (RFC 9112 §3.2) is a 400, never a tenant. Requests
 * are written byte for byte on a raw socket, since HTTP clients will not send either.
 */
import { connect } from 'node:net';
import { RelayFixture, startRelayFixture } from '../harness/relay-fixture.js';

let fx: RelayFixture;

beforeAll(async () => {
  fx = await startRelayFixture({ BUZZ_REQUIRE_AUTH_TOKEN: 'false' });
}, 60_000);

afterAll(async () => {
  await fx?.close();
});

/** Writes `head` (CRLF line ends added) and returns the status line and body of the answer. */
function raw(lines: string[], body = ''): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(fx.relay.port, '127.0.0.1');
    let text = '';
    socket.on('data', (d) => {
      text += d.toString();
      // One answer is enough; an upgrade that succeeded would stay open.
      if (/\r\n\r\n/.test(text) && (/content-length: 0/i.test(text) || /\r\n\r\n[\s\S]*[}\n]$/.test(text) || /^HTTP\/1\.1 101/.test(text))) socket.end();
    });
    socket.on('end', () => resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0), text }));
    socket.on('error', reject);
    socket.setTimeout(5000, () => socket.destroy(new Error(`no answer: ${JSON.stringify(text)}`)));
    socket.write(`${lines.join('\r\n')}\r\n${body ? `Content-Length: ${Buffer.byteLength(body)}\r\n` : ''}Connection: close\r\n\r\n${body}`);
  });
}

const query = (hosts: string[]) =>
  raw(['POST /query HTTP/1.1', ...hosts.map((h) => `Host: ${h}`), 'Content-Type: application/json', `X-Pubkey: ${'ab'.repeat(32)}`], JSON.stringify([{ kinds: [1], limit: 1 }]));
const upgrade = (hosts: string[]) =>
  raw(['GET / HTTP/1.1', ...hosts.map((h) => `Host: ${h}`), 'Upgrade: websocket', 'Connection: Upgrade', 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==', 'Sec-WebSocket-Version: 13']);

it('serves the bridge and opens the WebSocket for a plain Host (the baseline)', async () => {
  expect((await query([`localhost:${fx.relay.port}`])).status).toBe(200);
  expect((await upgrade([`localhost:${fx.relay.port}`])).status).toBe(101);
});

it('answers 400 to a Host with userinfo, on the bridge and the upgrade', async () => {
  const host = `localhost:${fx.relay.port}@other.test`;
  const http = await query([host]);
  expect(http.status).toBe(400);
  expect(http.text).toContain('{"error":"invalid Host header"}');
  expect((await upgrade([host])).status).toBe(400);
});

it('answers 400 to two Host headers, on the bridge and the upgrade', async () => {
  const hosts = [`localhost:${fx.relay.port}`, 'other.test'];
  const http = await query(hosts);
  expect(http.status).toBe(400);
  expect((await upgrade(hosts)).status).toBe(400);
});
