/**
 * Read-your-writes across pods: an author who published on pod A and reads on pod B once B has
 * the event live sees it there, while the replica has stopped replaying (so a bounded read that
 * ignored the write would be served a page without it). Pod B learns of the write from the
 * cross-pod fan-out (RoutedReader.noteWrite on receipt); a bystander's reads on B show the
 * replica really is behind.
 */
import { Identity, newIdentity, RawClient } from '../harness/nostr-clients.js';
import { startRedisServer, RedisServer } from '../harness/redis-server.js';
import { relayEnv } from '../harness/relay-fixture.js';
import { RelayProcess, startRelay } from '../harness/relay-process.js';
import { createTestDatabase, faultSupport, TestDatabase } from '../harness/test-database.js';

const ROUNDS = 10;

let db: TestDatabase;
let redis: RedisServer;
let podA: RelayProcess;
let podB: RelayProcess;
const clients: RawClient[] = [];

const maybe = faultSupport().supported ? describe : describe.skip;

async function connect(pod: RelayProcess, id: Identity): Promise<RawClient> {
  const client = await RawClient.authed(pod.wsUrl, id);
  clients.push(client);
  return client;
}

async function sees(client: RawClient, subId: string, id: string): Promise<boolean> {
  const { events, end } = await client.req(subId, { kinds: [1], ids: [id] });
  if (end[0] !== 'EOSE') throw new Error(`REQ ended with ${JSON.stringify(end)}`);
  client.send(['CLOSE', subId]);
  return events.some((e) => e.id === id);
}

maybe('read-your-writes across pods (BUZZ_REPLICA_READ_MAX_AGE_MS=30000, WAL replay paused)', () => {
  beforeAll(async () => {
    db = await createTestDatabase();
    redis = await startRedisServer();
    const env = relayEnv(db, { BUZZ_REDIS_URL: redis.url, BUZZ_REPLICA_READ_MAX_AGE_MS: '30000', BUZZ_RATE_LIMIT_HUMAN_WS_EVENTS_PER_SEC: '1000' });
    [podA, podB] = await Promise.all([startRelay(env), startRelay(env)]);
  }, 120_000);

  afterAll(async () => {
    for (const c of clients) c.close();
    await db?.cluster.resumeReplay();
    await Promise.all([podA?.stop(), podB?.stop()]);
    await redis?.stop();
    await db?.drop();
  }, 60_000);

  it('an author reading on the other pod sees each of its writes; a bystander there reads the stale replica', async () => {
    const alice = newIdentity();
    const bob = newIdentity();
    const publisher = await connect(podA, alice);
    const ownOnB = await connect(podB, alice);
    const bystanderOnB = await connect(podB, bob);
    const watcherOnB = await connect(podB, newIdentity());
    const live = await watcherOnB.req('live', { kinds: [1], authors: [alice.pubkey], since: Math.floor(Date.now() / 1000) });
    expect(live.end[0]).toBe('EOSE');
    await db.cluster.pauseReplay();
    let misses = 0;
    let bystanderMisses = 0;
    for (let i = 0; i < ROUNDS; i++) {
      const ev = alice.sign({ kind: 1, content: `across pods ${i}` });
      expect(await publisher.publish(ev)).toEqual([true, '']);
      // Pod B has the event once its live subscriber does.
      await watcherOnB.waitFor((f) => f[0] === 'EVENT' && f[1] === 'live' && (f[2] as { id: string }).id === ev.id, 5000);
      if (!(await sees(ownOnB, `own-${i}`, ev.id))) misses += 1;
      if (!(await sees(bystanderOnB, `by-${i}`, ev.id))) bystanderMisses += 1;
    }
    await db.cluster.resumeReplay();
    expect(misses).toBe(0);
    // Control: the replica is behind, so bounded reads without the rule miss these writes.
    expect(bystanderMisses).toBeGreaterThan(0);
  }, 90_000);
});
