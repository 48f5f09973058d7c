/**
 * Read routing through the running relay (issue 4 "Done means"): with a reader configured the
 * probe keeps the heartbeat fresh, history reads are served by the replica, and a client
 * reading what it just wrote always sees it, even while the replica has stopped replaying.
 */
import { createTestDatabase, faultSupport, type TestDatabase } from '../harness/test-database.js';
import { httpRequest, newIdentity, RawClient } from '../harness/nostr-clients.js';
import { RelayProcess, startRelay } from '../harness/relay-process.js';

const UNLIMITED = {
  BUZZ_RATE_LIMIT_HUMAN_WS_EVENTS_PER_SEC: '1000000',
  BUZZ_RATE_LIMIT_HUMAN_MESSAGES_PER_MIN: '1000000',
  BUZZ_RATE_LIMIT_HUMAN_API_CALLS_PER_MIN: '1000000',
};

let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase();
}, 30_000);

afterAll(async () => {
  await db?.drop();
}, 30_000);

async function relayFor(budgetMs: string): Promise<RelayProcess> {
  return startRelay({
    DATABASE_URL: db.writerUrl,
    READ_DATABASE_URL: db.readerUrl,
    BUZZ_DEFAULT_COMMUNITY_HOSTS: 'localhost,127.0.0.1',
    BUZZ_REPLICA_READ_MAX_AGE_MS: budgetMs,
    BUZZ_POOL_METRICS_INTERVAL_SECS: '1',
    // The bridge read names its reader with the X-Pubkey development header.
    BUZZ_REQUIRE_AUTH_TOKEN: 'false',
    ...UNLIMITED,
  });
}

/** Parsed `/metrics` samples: `name{labels}` → value. */
async function scrape(relay: RelayProcess): Promise<Map<string, number>> {
  const res = await httpRequest(relay.metricsUrl, {});
  const out = new Map<string, number>();
  for (const line of res.body.split('\n')) {
    const m = /^([a-z_]+(?:\{[^}]*\})?) ([0-9.e+-]+|NaN)$/.exec(line);
    if (m) out.set(m[1], Number(m[2]));
  }
  return out;
}

/**
 * The fence gauges are published by a sampler (every BUZZ_POOL_METRICS_INTERVAL_SECS, 1 s here),
 * not at scrape time: a test body that finishes within a second of start-up can scrape before
 * the first sample after the fence opened. Scrapes until that sample has been taken.
 */
async function scrapeSampled(relay: RelayProcess, sampledWithinMs = 5000): Promise<Map<string, number>> {
  const deadline = Date.now() + sampledWithinMs;
  for (;;) {
    const samples = await scrape(relay);
    if (samples.get('buzz_db_replica_fence_open') === 1 || Date.now() > deadline) return samples;
    await new Promise((r) => setTimeout(r, 100));
  }
}

function sum(samples: Map<string, number>, prefix: string, ...must: string[]): number {
  let total = 0;
  for (const [k, v] of samples) if (k.startsWith(prefix) && must.every((s) => k.includes(s))) total += v;
  return total;
}

async function readIds(client: RawClient, subId: string, ids: string[], limit?: number): Promise<string[]> {
  const { events, end } = await client.req(subId, { kinds: [1], ids, ...(limit === undefined ? {} : { limit }) });
  if (end[0] !== 'EOSE') throw new Error(`REQ ended with ${JSON.stringify(end)}`);
  client.send(['CLOSE', subId]);
  return events.map((e) => e.id);
}

describe('with BUZZ_REPLICA_READ_MAX_AGE_MS=2000', () => {
  let relay: RelayProcess;
  beforeAll(async () => {
    relay = await relayFor('2000');
  }, 30_000);
  afterAll(() => relay?.stop(), 30_000);

  it('keeps the heartbeat under one interval and serves history reads from the replica', async () => {
    const alice = newIdentity();
    const bob = newIdentity();
    const writer = await RawClient.authed(relay.wsUrl, alice);
    const reader = await RawClient.authed(relay.wsUrl, bob);
    const published: string[] = [];
    for (let i = 0; i < 20; i++) {
      const ev = alice.sign({ kind: 1, content: `load ${i}` });
      expect(await writer.publish(ev)).toEqual([true, '']);
      published.push(ev.id);
    }
    await db.waitForReplica();
    const before = await scrape(relay);
    const rounds = 200;
    for (let i = 0; i < rounds; i++) await readIds(reader, `load-${i}`, published.slice(0, 5));
    const after = await scrapeSampled(relay);
    const replica = sum(after, 'buzz_db_route_decision{', 'req_historical', 'decision="replica"') - sum(before, 'buzz_db_route_decision{', 'req_historical', 'decision="replica"');
    const all = sum(after, 'buzz_db_route_decision{', 'req_historical') - sum(before, 'buzz_db_route_decision{', 'req_historical');
    const age = after.get('buzz_db_replica_heartbeat_age_seconds');
    process.stderr.write(`[read-routing] offload share ${((100 * replica) / all).toFixed(1)}% (${replica}/${all}), heartbeat age ${age} s\n`);
    expect(all).toBe(rounds);
    expect(replica / all).toBeGreaterThan(0.9);
    expect(after.get('buzz_db_replica_fence_open')).toBe(1);
    expect(age).toBeLessThan(0.5 + 0.5); // sampled at an arbitrary point of a 500 ms beat cycle
    writer.close();
    reader.close();
  }, 60_000);

  it('under mixed load (one writer, four readers) most history reads are offloaded and the heartbeat stays fresh', async () => {
    const alice = newIdentity();
    const writer = await RawClient.authed(relay.wsUrl, alice);
    const readers = await Promise.all(Array.from({ length: 4 }, () => RawClient.authed(relay.wsUrl, newIdentity())));
    const ids: string[] = [];
    for (let i = 0; i < 10; i++) {
      const ev = alice.sign({ kind: 1, content: `seed ${i}` });
      await writer.publish(ev);
      ids.push(ev.id);
    }
    const before = await scrape(relay);
    let writing = true;
    const writes = (async () => {
      for (let i = 0; writing; i++) await writer.publish(alice.sign({ kind: 1, content: `mixed ${i}` }));
    })();
    const ages: number[] = [];
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const m = await scrape(relay);
        ages.push(m.get('buzz_db_replica_heartbeat_age_seconds') ?? NaN);
        await new Promise((r) => setTimeout(r, 250));
      }
    })();
    await Promise.all(readers.map(async (c, r) => {
      // A limit of its own per reader: identical reads waiting together would share one read.
      for (let i = 0; i < 100; i++) await readIds(c, `mix-${r}-${i}`, ids, 100 + r);
    }));
    writing = false;
    sampling = false;
    await Promise.all([writes, sampler]);
    const after = await scrape(relay);
    const replica = sum(after, 'buzz_db_route_decision{', 'req_historical', 'decision="replica"') - sum(before, 'buzz_db_route_decision{', 'req_historical', 'decision="replica"');
    const all = sum(after, 'buzz_db_route_decision{', 'req_historical') - sum(before, 'buzz_db_route_decision{', 'req_historical');
    const maxAge = Math.max(...ages);
    process.stderr.write(
      `[read-routing] mixed load: offload ${((100 * replica) / all).toFixed(1)}% (${replica}/${all}); heartbeat age samples max ${maxAge.toFixed(3)} s, ` +
        `mean ${(ages.reduce((a, b) => a + b, 0) / ages.length).toFixed(3)} s over ${ages.length} scrapes\n`,
    );
    expect(all).toBe(400);
    expect(replica / all).toBeGreaterThan(0.8);
    expect(maxAge).toBeLessThan(1.7); // min_read_budget at the default interval
    writer.close();
    for (const c of readers) c.close();
  }, 60_000);
});

const maybe = faultSupport().supported ? describe : describe.skip;

maybe('read-your-writes (BUZZ_REPLICA_READ_MAX_AGE_MS=30000, WAL replay paused)', () => {
  let relay: RelayProcess;
  beforeAll(async () => {
    relay = await relayFor('30000');
  }, 30_000);
  afterAll(async () => {
    await db.cluster.resumeReplay();
    await relay?.stop();
  }, 30_000);

  it('publish then read at once from another connection, 300 times: zero misses; a bystander may miss', async () => {
    const alice = newIdentity();
    const bob = newIdentity();
    const publisher = await RawClient.authed(relay.wsUrl, alice);
    const own = await RawClient.authed(relay.wsUrl, alice);
    const bystander = await RawClient.authed(relay.wsUrl, bob);
    await db.cluster.pauseReplay();
    let misses = 0;
    let bystanderMisses = 0;
    for (let i = 0; i < 300; i++) {
      const ev = alice.sign({ kind: 1, content: `ryw ${i}` });
      expect(await publisher.publish(ev)).toEqual([true, '']);
      if (!(await readIds(own, `own-${i}`, [ev.id])).includes(ev.id)) misses += 1;
      if (i % 30 === 0 && !(await readIds(bystander, `by-${i}`, [ev.id])).includes(ev.id)) bystanderMisses += 1;
    }
    await db.cluster.resumeReplay();
    process.stderr.write(`[read-routing] read-your-writes: ${misses}/300 misses; bystander ${bystanderMisses}/10 misses\n`);
    expect(misses).toBe(0);
    // Control: bounded routing alone lets a reader miss the newest commits (replay is paused),
    // so the check above could fail if the read-your-writes rule were missing.
    expect(bystanderMisses).toBeGreaterThan(0);
    publisher.close();
    own.close();
    bystander.close();
  }, 60_000);

  it('/query honours consistency:"strong" (writer, no route decision); default /query, /count and COUNT route', async () => {
    const alice = newIdentity();
    const bob = newIdentity();
    const publisher = await RawClient.authed(relay.wsUrl, alice);
    await db.cluster.pauseReplay();
    try {
      const ev = alice.sign({ kind: 1, content: 'strong read' });
      expect(await publisher.publish(ev)).toEqual([true, '']);
      const post = (path: string, filter: object) =>
        httpRequest(`${relay.httpUrl}${path}`, {
          method: 'POST',
          headers: { host: 'localhost', 'x-pubkey': bob.pubkey, 'content-type': 'application/json' },
          body: JSON.stringify([filter]),
        });
      const before = await scrape(relay);
      const strong = await post('/query', { kinds: [1], ids: [ev.id], consistency: 'strong' });
      const mid = await scrape(relay);
      const routed = await post('/query', { kinds: [1], ids: [ev.id] });
      const counted = await post('/count', { kinds: [1], ids: [ev.id] });
      const bobWs = await RawClient.authed(relay.wsUrl, bob);
      bobWs.send(['COUNT', 'c1', { kinds: [1], ids: [ev.id] }]);
      const count = await bobWs.waitFor((f) => f[0] === 'COUNT' && f[1] === 'c1');
      const after = await scrape(relay);
      expect(strong.status).toBe(200);
      expect(JSON.parse(strong.body).map((e: { id: string }) => e.id)).toEqual([ev.id]);
      expect(sum(mid, 'buzz_db_route_decision{') - sum(before, 'buzz_db_route_decision{')).toBe(0);
      // The bystander's routed reads are served by the paused replica: bounded staleness, visibly.
      expect(JSON.parse(routed.body)).toEqual([]);
      expect(JSON.parse(counted.body)).toEqual({ count: 0 });
      expect(count[2]).toEqual({ count: 0 });
      const d = (path: string) => sum(after, 'buzz_db_route_decision{', `path="${path}"`, 'decision="replica"') - sum(mid, 'buzz_db_route_decision{', `path="${path}"`, 'decision="replica"');
      expect([d('bridge_query'), d('bridge_count'), d('count_req')]).toEqual([1, 1, 1]);
      bobWs.close();
    } finally {
      await db.cluster.resumeReplay();
      publisher.close();
    }
  }, 30_000);
});
