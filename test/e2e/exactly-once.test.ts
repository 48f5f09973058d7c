/**
 * Exactly once per subscription, on the built relay and the real writer + replica pair: an event
 * published while a REQ's stored page is being read reaches that subscription once, either in the
 * page or live, never both and never neither. The REQ registers for live delivery before its
 * history read, so the event can be both live and in the page; the probe makes the two meet again
 * and again (the EVENT leaves a few milliseconds before or after the REQ) and counts.
 *
 * Late copies are caught without waiting on a clock: after each round a marker event is
 * published by the same publisher, and live deliveries to one connection keep their order (across
 * pods too: one pod's publications reach Redis in order), so once the marker has arrived on the
 * subscription every earlier live copy has too.
 */
import { randomUUID } from 'node:crypto';
import { Frame, Identity, newIdentity, RawClient } from '../harness/nostr-clients.js';
import { relayEnv, RelayFixture, startRelayFixture } from '../harness/relay-fixture.js';
import { RelayProcess, startRelay } from '../harness/relay-process.js';
import { redisServerBinary, RedisServer, startRedisServer } from '../harness/redis-server.js';

const ROUNDS = 200;
const UNLIMITED = {
  BUZZ_RATE_LIMIT_HUMAN_MESSAGES_PER_MIN: '1000000',
  BUZZ_RATE_LIMIT_HUMAN_WS_EVENTS_PER_SEC: '1000000',
  BUZZ_RATE_LIMIT_HUMAN_WS_BURST: '1000000',
};

let fixture: RelayFixture;
let redis: RedisServer | undefined;
const pods: RelayProcess[] = [];
const clients: RawClient[] = [];
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
const idOf = (f: Frame) => (f[2] as { id: string }).id;

beforeAll(async () => {
  fixture = await startRelayFixture(UNLIMITED);
});

afterAll(async () => {
  for (const c of clients) c.close();
  for (const p of pods) await p.stop();
  await redis?.stop();
  await fixture?.close();
});

async function authed(url: string, id: Identity): Promise<RawClient> {
  const c = await RawClient.authed(url, id);
  clients.push(c);
  return c;
}

interface Tally {
  duplicated: number;
  lost: number;
  /** Probes that arrived before EOSE: in the page, or live while the page was read. */
  beforeEose: number;
  /** Probes that arrived only live, after EOSE. */
  afterEose: number;
}

/** `rounds` REQs on `sub`'s connection, each racing one probe published from `pub`'s. */
async function probe(sub: RawClient, pub: RawClient, id: Identity, channel: string, rounds: number): Promise<Tally> {
  const tally: Tally = { duplicated: 0, lost: 0, beforeEose: 0, afterEose: 0 };
  for (let round = 0; round < rounds; round++) {
    const subId = `s${round}`;
    const from = sub.frames.length;
    const pubFrom = pub.frames.length;
    const ev = id.sign({ kind: 9, content: `probe ${round}`, tags: [['h', channel]] });
    const marker = id.sign({ kind: 9, content: `marker ${round}`, tags: [['h', channel]] });
    // Only these two ids: a page of other events from the same second cannot push the probe out.
    const req = JSON.stringify(['REQ', subId, { kinds: [9], '#h': [channel], ids: [ev.id, marker.id] }]);
    const event = JSON.stringify(['EVENT', ev]);
    // The EVENT leaves up to 3 ms before or 8 ms after the REQ, sweeping the publish across the
    // REQ's admission, live registration and history read.
    const offset = (round % 12) - 3;
    if (offset < 0) pub.send(event);
    if (offset < 0) await pause(-offset);
    sub.send(req);
    if (offset >= 0) await pause(offset);
    if (offset >= 0) pub.send(event);
    expect(await pub.waitFor((f) => f[0] === 'OK' && f[1] === ev.id, 10_000, pubFrom)).toEqual(['OK', ev.id, true, '']);
    expect(await sub.waitFor((f) => (f[0] === 'EOSE' || f[0] === 'CLOSED') && f[1] === subId, 10_000, from)).toEqual(['EOSE', subId]);
    expect(await pub.publish(marker)).toEqual([true, '']);
    await sub.waitFor((f) => f[0] === 'EVENT' && f[1] === subId && idOf(f) === marker.id, 10_000, from);
    const frames = sub.frames.slice(from).filter((f) => f[1] === subId);
    const eose = frames.findIndex((f) => f[0] === 'EOSE');
    const hits = frames.flatMap((f, at) => (f[0] === 'EVENT' && idOf(f) === ev.id ? [at] : []));
    if (hits.length > 1) tally.duplicated += 1;
    else if (hits.length === 0) tally.lost += 1;
    else if (hits[0] < eose) tally.beforeEose += 1;
    else tally.afterEose += 1;
    if (hits.length !== 1) process.stderr.write(`round ${round} (offset ${offset} ms): ${hits.length} copies\n`);
    sub.send(['CLOSE', subId]);
  }
  return tally;
}

async function newChannel(c: RawClient, id: Identity): Promise<string> {
  const channel = randomUUID();
  expect(await c.publish(id.sign({ kind: 9007, tags: [['h', channel], ['name', 'once'], ['visibility', 'private']] }))).toEqual([true, '']);
  for (let i = 0; i < 5; i++) expect(await c.publish(id.sign({ kind: 9, content: `old ${i}`, tags: [['h', channel]] }))).toEqual([true, '']);
  return channel;
}

describe('an event published while a REQ reads its history', () => {
  it(`arrives once on that subscription: ${ROUNDS} rounds on one pod, no duplicate and no loss`, async () => {
    const alice = newIdentity();
    const sub = await authed(fixture.relay.wsUrl, alice);
    const pub = await authed(fixture.relay.wsUrl, alice);
    const tally = await probe(sub, pub, alice, await newChannel(sub, alice), ROUNDS);
    expect({ duplicated: tally.duplicated, lost: tally.lost }).toEqual({ duplicated: 0, lost: 0 });
    // The sweep straddled the REQ's live registration: both kinds of arrival happened.
    expect(tally.beforeEose).toBeGreaterThan(0);
    expect(tally.afterEose).toBeGreaterThan(0);
  });

  const withRedis = redisServerBinary() ? it : it.skip;
  withRedis(`arrives once when another pod accepted it (over Redis): ${ROUNDS} rounds`, async () => {
    redis = await startRedisServer();
    const env = relayEnv(fixture.db, { ...UNLIMITED, BUZZ_REDIS_URL: redis.url, BUZZ_RELAY_PRIVATE_KEY: 'a'.repeat(63) + '1' });
    const [podA, podB] = await Promise.all([startRelay(env), startRelay(env)]);
    pods.push(podA, podB);
    const bob = newIdentity();
    const pub = await authed(podA.wsUrl, bob);
    const sub = await authed(podB.wsUrl, bob);
    const tally = await probe(sub, pub, bob, await newChannel(pub, bob), ROUNDS);
    expect({ duplicated: tally.duplicated, lost: tally.lost }).toEqual({ duplicated: 0, lost: 0 });
    expect(tally.beforeEose).toBeGreaterThan(0);
    expect(tally.afterEose).toBeGreaterThan(0);
  });
});
