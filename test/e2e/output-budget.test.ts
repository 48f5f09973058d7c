/**
 * Bounded output memory (issue 21, finding 6) on the running relay and the writer + replica
 * pair. Clients that stop reading (their socket paused) each ask for several large histories:
 * their subscriptions end with `CLOSED "error: slow consumer: output buffer full"` or they are
 * disconnected, the relay's queued output never passes the process budget, and its memory does
 * not grow with what they asked for. A client that reads, on the same relay at the same time,
 * still gets its whole history, its EOSE and live events.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { newIdentity, RawClient } from '../harness/nostr-clients.js';
import { RelayFixture, startRelayFixture } from '../harness/relay-fixture.js';

const PER_CONNECTION = 256 * 1024;
const PROCESS_WIDE = 1024 * 1024;
const ROWS = 300;
const CONTENT_CHARS = 20_000;
const STALLED = 10;
const REQS_EACH = 8;
const SLOW = 'error: slow consumer: output buffer full';

let fx: RelayFixture;

beforeAll(async () => {
  fx = await startRelayFixture({
    BUZZ_SEND_BUFFER_BYTES: String(PER_CONNECTION),
    BUZZ_SEND_BUFFER_TOTAL_BYTES: String(PROCESS_WIDE),
    BUZZ_RATE_LIMIT_HUMAN_WS_EVENTS_PER_SEC: '1000',
  });
  await fx.writer.query(
    `insert into events (community_id, id, pubkey, created_at, kind, tags, content, sig)
     select c.id, decode(md5('big' || g) || md5('row' || g), 'hex'), $1, now() - (g || ' seconds')::interval, 1, '[]',
            repeat(md5(g::text), $2 / 32), $3
       from communities c, generate_series(1, $4) g
      where c.host = 'localhost'`,
    [randomBytes(32), CONTENT_CHARS, randomBytes(64), ROWS],
  );
  await fx.db.waitForReplica();
}, 60_000);

afterAll(async () => {
  await fx?.close();
});

async function metric(name: string): Promise<number> {
  const text = await (await fetch(fx.relay.metricsUrl)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? 0 : Number(line.split(' ')[1]);
}

function rssBytes(): number {
  const status = readFileSync(`/proc/${fx.relay.child.pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) * 1024;
}

/** Every sub id ended (EOSE or CLOSED) or the socket closed. */
async function settled(c: RawClient, subIds: string[]): Promise<boolean> {
  try {
    for (const id of subIds) await c.waitFor((f) => (f[0] === 'EOSE' || f[0] === 'CLOSED') && f[1] === id, 20_000);
    return true;
  } catch {
    return c.closed !== undefined;
  }
}

const bigHistory = { kinds: [1], limit: 1000 };

/** A REQ's history and its end (EOSE or CLOSED); the error names only the frame count, not 12 MB of frames. */
async function history(c: RawClient, subId: string, filter: object): Promise<{ events: number; end: unknown[] }> {
  const from = c.frames.length;
  c.send(['REQ', subId, filter]);
  let end: unknown[];
  try {
    end = await c.waitFor((f) => (f[0] === 'EOSE' || f[0] === 'CLOSED') && f[1] === subId, 60_000, from);
  } catch {
    throw new Error(`no end for ${subId}: ${c.frames.length - from} frames, closed ${JSON.stringify(c.closed)}`);
  }
  return { events: c.frames.slice(from).filter((f) => f[0] === 'EVENT' && f[1] === subId).length, end };
}

it('ends a stalled reader’s subscriptions or disconnects it, keeps queued output under the process budget and memory bounded, and still serves a reading client', async () => {
  const reader = newIdentity();
  const writer = newIdentity();
  const normal = await RawClient.authed(fx.relay.wsUrl, reader);
  // Warm-up: one full history read by a reading client, so the baseline includes what serving history costs.
  expect(await history(normal, 'warm', bigHistory)).toEqual({ events: ROWS, end: ['EOSE', 'warm'] });
  const rssBefore = rssBytes();

  const stalled = await Promise.all(Array.from({ length: STALLED }, () => RawClient.authed(fx.relay.wsUrl, newIdentity())));
  const subIds = Array.from({ length: REQS_EACH }, (_, i) => `h${i}`);
  const shedOrCut = async () => (await metric('buzz_ws_slow_consumer_closes_total')) + (await metric('buzz_ws_backpressure_disconnects_total'));
  let peakQueued = 0;
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      peakQueued = Math.max(peakQueued, await metric('buzz_ws_output_queued_bytes'));
      await new Promise((r) => setTimeout(r, 10));
    }
  })();
  let rssFirst = 0;
  let rssStalled = 0;
  try {
    // Each stalled client asks for one large history; it fills its socket and its budget.
    for (const c of stalled) {
      c.ws.pause();
      c.send(['REQ', subIds[0], bigHistory]);
    }
    for (let i = 0; i < 200 && (await shedOrCut()) < STALLED; i++) await new Promise((r) => setTimeout(r, 50));
    rssFirst = rssBytes();
    // Then for more of them: a client over budget gets no more history read or encoded.
    for (const c of stalled) for (const id of subIds.slice(1)) c.send(['REQ', id, bigHistory]);
    for (let i = 0; i < 200 && (await shedOrCut()) < STALLED * REQS_EACH; i++) await new Promise((r) => setTimeout(r, 50));

    // While they are stalled, a reading client gets its whole history, its EOSE and a live event.
    expect(await history(normal, 'during', bigHistory)).toEqual({ events: ROWS, end: ['EOSE', 'during'] });
    expect(await history(normal, 'live', { kinds: [1], authors: [writer.pubkey], limit: 0 })).toEqual({ events: 0, end: ['EOSE', 'live'] });
    const publisher = await RawClient.authed(fx.relay.wsUrl, writer);
    const ev = writer.sign({ kind: 1, content: 'still live' });
    expect(await publisher.publish(ev)).toEqual([true, '']);
    await normal.waitFor((f) => f[0] === 'EVENT' && f[1] === 'live' && (f[2] as { id: string }).id === ev.id);
    publisher.close();
    rssStalled = rssBytes();
  } finally {
    sampling = false;
    await sampler;
  }

  // Unbounded, each stalled client would hold what it asked for less what its socket took
  // (about 4 MB): some 30 MB apiece. Bounded, the later requests cost nothing to hold.
  const mib = (n: number) => Math.round(n / 2 ** 20);
  console.log(`queued peak ${peakQueued} B; RSS growth ${mib(rssFirst - rssBefore)} MiB after the first requests, ${mib(rssStalled - rssFirst)} MiB after the rest`);
  expect(peakQueued).toBeLessThanOrEqual(PROCESS_WIDE);
  expect(await metric('buzz_ws_output_queued_bytes')).toBeLessThanOrEqual(PROCESS_WIDE);
  expect(rssStalled - rssFirst).toBeLessThan(64 * 2 ** 20);
  expect(rssStalled - rssBefore).toBeLessThan(256 * 2 ** 20);

  // Once they read again, each stalled client finds every subscription ended with the
  // slow-consumer CLOSED, or its socket closed.
  for (const c of stalled) c.ws.resume();
  expect(await Promise.all(stalled.map((c) => settled(c, subIds)))).toEqual(stalled.map(() => true));
  for (const c of stalled) {
    if (c.closed) continue;
    const ends = c.frames.filter((f) => (f[0] === 'EOSE' || f[0] === 'CLOSED') && subIds.includes(f[1] as string));
    expect(ends.map((f) => f.slice(0, 1).concat(f.slice(2)))).toEqual(subIds.map(() => ['CLOSED', SLOW]));
  }
  for (const c of [normal, ...stalled]) c.ws.close();
}, 180_000);
