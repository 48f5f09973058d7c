/**
 * What an operator sees of HTTP requests (issue 20, relay.md §3.1 step 8 and §6.3), on the built
 * relay over the real writer + replica pair: one log line per request, 404s and bridge routes
 * included, carrying method, route pattern, status, duration and host and never a body or an
 * Authorization value; and `http_requests_total` / `http_request_latency_ms{code,caller,action}`
 * for matched routes only, with `caller` from a validated mesh header.
 */
import { randomBytes } from 'node:crypto';
import { eventually } from '../harness/eventually.js';
import { newIdentity, nip98Header } from '../harness/nostr-clients.js';
import { relayEnv } from '../harness/relay-fixture.js';
import { startRelay, type RelayProcess } from '../harness/relay-process.js';
import { createTestDatabase, type TestDatabase } from '../harness/test-database.js';

let db: TestDatabase;
let relay: RelayProcess;

beforeAll(async () => {
  db = await createTestDatabase();
  relay = await startRelay(relayEnv(db, { LOG_LEVEL: 'info' }));
}, 60_000);

afterAll(async () => {
  await relay?.stop();
  await db?.drop();
}, 60_000);

type LogLine = Record<string, unknown>;
const REQUEST_MESSAGES = new Set(['request completed', 'HTTP bridge request']);

function requestLines(): LogLine[] {
  return relay
    .output()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as LogLine)
    .filter((l) => REQUEST_MESSAGES.has(String(l.msg)));
}

/** The request lines logged since `before` request lines, once `n` of them are there. */
async function nextLines(before: number, n: number): Promise<LogLine[]> {
  await eventually(`${n} request line(s)`, async () => requestLines().length >= before + n);
  // Anything beyond n would be a second line for one of these requests; give it time to show.
  await new Promise((r) => setTimeout(r, 300));
  return requestLines().slice(before);
}

async function metrics(): Promise<string> {
  return (await fetch(relay.metricsUrl)).text();
}

/** The value of one series of `http_requests_total`, or undefined when there is no such series. */
function requests(text: string, labels: { code: string; caller: string; action: string }): number | undefined {
  const series = `http_requests_total{code="${labels.code}",caller="${labels.caller}",action="${labels.action}"}`;
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe('request logging', () => {
  it('logs each request once with method, route, status, duration and host, and never a body or the Authorization value', async () => {
    const alice = newIdentity();
    const secret = `body-secret-${randomBytes(8).toString('hex')}`;
    const note = alice.sign({ kind: 1, content: secret });
    const eventsBody = JSON.stringify(note);
    const eventsAuth = nip98Header(alice, `${relay.httpUrl}/events`, eventsBody, undefined, true);
    const queryBody = JSON.stringify([{ ids: [note.id] }]);
    const queryAuth = nip98Header(alice, `${relay.httpUrl}/query`, queryBody, undefined, true);
    const unauthorised = `Nostr ${Buffer.from(`not-an-event-${randomBytes(16).toString('hex')}`).toString('base64')}`;
    const missing = `/missing-${randomBytes(6).toString('hex')}`;
    const before = requestLines().length;

    const statuses: number[] = [];
    const send = async (path: string, init: RequestInit = {}) => {
      const res = await fetch(`${relay.httpUrl}${path}`, init);
      await res.arrayBuffer();
      statuses.push(res.status);
    };
    await send('/events', { method: 'POST', headers: { authorization: eventsAuth }, body: eventsBody });
    await send('/query', { method: 'POST', headers: { authorization: queryAuth }, body: queryBody });
    await send('/count', { method: 'POST', headers: { authorization: unauthorised }, body: queryBody });
    await send(missing);
    await send('/');
    expect(statuses).toEqual([200, 200, 401, 404, 200]);

    const lines = await nextLines(before, 5);
    expect(lines).toHaveLength(5);
    const host = `localhost:${relay.port}`;
    expect(lines[0]).toMatchObject({ msg: 'HTTP bridge request', method: 'POST', route: '/events', status: 200, host, pubkey: alice.pubkey, kind: 1, accepted: true });
    expect(lines[1]).toMatchObject({ msg: 'HTTP bridge request', method: 'POST', route: '/query', status: 200, host, pubkey: alice.pubkey, result_count: 1 });
    expect(lines[2]).toMatchObject({ msg: 'HTTP bridge request', method: 'POST', route: '/count', status: 401, host, reason: 'invalid NIP-98 event JSON' });
    expect(lines[3]).toMatchObject({ msg: 'request completed', method: 'GET', route: null, status: 404, host });
    expect(lines[4]).toMatchObject({ msg: 'request completed', method: 'GET', route: '/', status: 200, host });
    for (const line of lines.slice(0, 3)) expect(line.community).toMatch(/^[0-9a-f-]{36}$/);
    for (const line of lines) {
      expect(typeof line.duration_ms).toBe('number');
      expect(line.duration_ms).toBeGreaterThanOrEqual(0);
    }
    // Nothing the client sent but the Host reaches the output: no body, no auth header, not even redacted.
    const out = relay.output();
    for (const auth of [eventsAuth, queryAuth, unauthorised]) {
      expect(out).not.toContain(auth.slice('Nostr '.length, 'Nostr '.length + 40));
    }
    expect(out).not.toContain(secret);
    expect(out).not.toContain(missing);
    expect(out).not.toMatch(/authorization|Redacted/i);
  });
});

describe('HTTP middleware metrics', () => {
  it('counts matched routes by code, caller and route pattern; skips probes, /metrics and unmatched paths', async () => {
    const m0 = await metrics();
    const random = Array.from({ length: 5 }, () => `/scan-${randomBytes(6).toString('hex')}`);
    for (const path of random) expect((await fetch(`${relay.httpUrl}${path}`)).status).toBe(404);
    for (const path of ['/healthz', '/health', '/readyz', '/_liveness', '/_readiness']) expect((await fetch(`${relay.httpUrl}${path}`)).status).toBe(200);
    expect((await fetch(`${relay.httpUrl}/metrics`)).status).toBe(404);
    const mesh = { 'x-envoy-downstream-service-cluster': 'edge-gateway_1' };
    for (let i = 0; i < 3; i++) expect((await fetch(`${relay.httpUrl}/`, { headers: mesh })).status).toBe(200);
    for (const bad of ['bad caller!', 'x'.repeat(65), 'gateway.svc', '']) {
      expect((await fetch(`${relay.httpUrl}/info`, { headers: { 'x-envoy-downstream-service-cluster': bad } })).status).toBe(200);
    }
    expect((await fetch(`${relay.httpUrl}/count`, { method: 'POST', body: '[{}]' })).status).toBe(401);

    const m1 = await metrics();
    const delta = (labels: { code: string; caller: string; action: string }) => (requests(m1, labels) ?? 0) - (requests(m0, labels) ?? 0);
    expect(delta({ code: '200', caller: 'edge-gateway_1', action: '/' })).toBe(3);
    expect(delta({ code: '200', caller: 'unknown', action: '/info' })).toBe(4);
    expect(delta({ code: '401', caller: 'unknown', action: '/count' })).toBe(1);
    expect(m1).toMatch(/^http_request_latency_ms_bucket\{le="5",code="200",caller="edge-gateway_1",action="\/"\} \d+$/m);
    expect(m1).toMatch(/^http_request_latency_ms_bucket\{le="10000",code="200",caller="edge-gateway_1",action="\/"\} \d+$/m);
    expect(m1).toMatch(/^http_request_latency_ms_count\{code="401",caller="unknown",action="\/count"\} \d+$/m);

    // Bounded label sets: only route patterns as actions, only valid names as callers.
    const actions = new Set([...m1.matchAll(/^http_requests_total\{[^}]*action="([^"]*)"/gm)].map((m) => m[1]));
    expect([...actions].sort()).toEqual(expect.arrayContaining(['/', '/count', '/info']));
    for (const action of actions) expect(['/', '/info', '/events', '/query', '/count']).toContain(action);
    const callers = new Set([...m1.matchAll(/^http_requests_total\{[^}]*caller="([^"]*)"/gm)].map((m) => m[1]));
    expect([...callers].sort()).toEqual(['edge-gateway_1', 'unknown']);
    for (const path of random) expect(m1).not.toContain(path);
  });
});
