/**
 * The pre-AUTH input budget per address (BUZZ_PREAUTH_INPUT_BYTES_PER_IP; docs/security.md,
 * "Before AUTH") through the built relay on a real writer and streaming replica: one address's
 * sockets that flood frames before AUTH are read at the address's rate, all of them together,
 * while a client from another address is read as before: its frames sent before AUTH are held
 * and served once it authenticates.
 *
 * Clients pick their source address in 127.0.0.0/8 (every such address reaches the loopback relay).
 */
import { finalizeEvent } from 'nostr-tools/pure';
import { newIdentity, RawClient } from '../harness/nostr-clients.js';
import { relayEnv } from '../harness/relay-fixture.js';
import { RelayProcess, startRelay } from '../harness/relay-process.js';
import { createTestDatabase, TestDatabase } from '../harness/test-database.js';
import { metricSum } from '../harness/relay-metrics.js';
import { eventually } from '../harness/eventually.js';

const RATE = 64 * 1024;
const SOCKETS = 40;
const FRAMES = 30;
const FLOOD_FROM = '127.0.0.7';
const VICTIM_FROM = '127.0.0.9';

let db: TestDatabase;
let relay: RelayProcess;
let unlimited: RelayProcess;

const QUOTAS_OFF = { BUZZ_RATE_LIMIT_HUMAN_MESSAGES_PER_MIN: '1000000', BUZZ_RATE_LIMIT_HUMAN_WS_EVENTS_PER_SEC: '1000000' };

beforeAll(async () => {
  db = await createTestDatabase();
  [relay, unlimited] = await Promise.all([
    startRelay(relayEnv(db, { ...QUOTAS_OFF, BUZZ_PREAUTH_INPUT_BYTES_PER_IP: String(RATE) })),
    startRelay(relayEnv(db, { ...QUOTAS_OFF, BUZZ_PREAUTH_INPUT_BYTES_PER_IP: '0' })),
  ]);
}, 60_000);

afterAll(async () => {
  await Promise.all([relay?.stop(), unlimited?.stop()]);
  await db?.drop();
});

/**
 * SOCKETS unauthenticated sockets from one address, each sending FRAMES frames of 8 KB at once
 * (9.6 MB in all) and never authenticating; resolves, once the relay has closed them all at the
 * AUTH deadline, with how many of the frames the relay answered.
 */
async function flood(url: string): Promise<number> {
  const sockets = await Promise.all(Array.from({ length: SOCKETS }, () => RawClient.connect(url, {}, FLOOD_FROM)));
  const note = finalizeEvent({ kind: 1, created_at: Math.floor(Date.now() / 1000), tags: [], content: 'x'.repeat(8000) }, newIdentity().sk);
  const frame = JSON.stringify(['EVENT', note]);
  for (const s of sockets) for (let i = 0; i < FRAMES; i++) s.send(frame);
  await Promise.all(sockets.map((s) => s.waitClosed(20_000).catch(() => s.ws.terminate())));
  return sockets.reduce((n, s) => n + s.frames.filter((f) => f[0] === 'OK').length, 0);
}

/** A client from another address: a REQ before its AUTH (as nostr-tools sends it), then a publish and a read. */
async function victimServed(url: string): Promise<void> {
  const id = newIdentity();
  const c = await RawClient.connect(url, {}, VICTIM_FROM);
  try {
    c.send(['REQ', 'early', { kinds: [1], limit: 1 }]);
    const auth = id.sign({ kind: 22242, tags: [['relay', url], ['challenge', c.challenge]] });
    c.send(['AUTH', auth]);
    expect((await c.waitFor((f) => f[0] === 'OK' && f[1] === auth.id))[2]).toBe(true);
    expect((await c.waitFor((f) => f[1] === 'early' && (f[0] === 'EOSE' || f[0] === 'CLOSED')))[0]).toBe('EOSE');
    const ev = finalizeEvent({ kind: 1, created_at: Math.floor(Date.now() / 1000), tags: [], content: `victim ${auth.id}` }, id.sk);
    expect(await c.publish(ev)).toEqual([true, '']);
  } finally {
    c.close();
  }
}

it("reads one address's unauthenticated flood at its rate while another address is served", async () => {
  const answered = flood(relay.wsUrl);
  await eventually('the flooding address is waiting for its budget', async () => (await metricSum(relay.metricsUrl, 'buzz_ws_preauth_waiting')) > 0, 10_000);
  await victimServed(relay.wsUrl);
  // The budget: a burst of 4 s of the rate plus the rate for the 5 s until the AUTH deadline, and
  // one socket read (at most 64 KiB) for each time a waiting socket is let read again. All of it
  // is far below the 1,200 frames sent; the bound is half of them.
  expect(await answered).toBeLessThan((SOCKETS * FRAMES) / 2);
  expect(await metricSum(relay.metricsUrl, 'buzz_ws_preauth_paced_total')).toBeGreaterThan(0);
  await eventually('nobody is left waiting', async () => (await metricSum(relay.metricsUrl, 'buzz_ws_preauth_waiting')) === 0, 15_000);
}, 60_000);

it('with the budget off (0), every frame of the same flood is read and answered', async () => {
  expect(await flood(unlimited.wsUrl)).toBe(SOCKETS * FRAMES);
  expect(await metricSum(unlimited.metricsUrl, 'buzz_ws_preauth_paced_total')).toBe(0);
}, 60_000);
