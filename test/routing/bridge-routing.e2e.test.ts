/**
 * The chat-surface read paths through the running relay with a reader and a read
 * budget: every bridge branch and the membership check records its own route
 * decision on its own path label, and a bystander's display reads are served by
 * the replica once it has replayed the writes.
 */
import { randomUUID } from 'node:crypto';
import { Pool } from 'pg';
import { createTestDatabase, type TestDatabase } from '../harness/test-database.js';
import { httpRequest, newIdentity, RawClient } from '../harness/nostr-clients.js';
import { RelayProcess, startRelay } from '../harness/relay-process.js';

let db: TestDatabase;
let relay: RelayProcess;

beforeAll(async () => {
  db = await createTestDatabase();
  relay = await startRelay({
    DATABASE_URL: db.writerUrl,
    READ_DATABASE_URL: db.readerUrl,
    BUZZ_DEFAULT_COMMUNITY_HOSTS: 'localhost',
    BUZZ_REPLICA_READ_MAX_AGE_MS: '2000',
    BUZZ_REQUIRE_RELAY_MEMBERSHIP: 'true',
    // The bridge calls name their reader with the X-Pubkey development header.
    BUZZ_REQUIRE_AUTH_TOKEN: 'false',
    BUZZ_RATE_LIMIT_HUMAN_WS_EVENTS_PER_SEC: '100000',
    BUZZ_RATE_LIMIT_HUMAN_MESSAGES_PER_MIN: '100000',
    BUZZ_RATE_LIMIT_HUMAN_API_CALLS_PER_MIN: '100000',
  });
}, 30_000);

afterAll(async () => {
  await relay?.stop();
  await db?.drop();
}, 30_000);

async function decisions(): Promise<Map<string, number>> {
  const res = await httpRequest(relay.metricsUrl, {});
  const out = new Map<string, number>();
  for (const line of res.body.split('\n')) {
    const m = /^buzz_db_route_decision\{([^}]*)\} ([0-9.e+-]+)$/.exec(line);
    if (!m) continue;
    const labels = Object.fromEntries([...m[1].matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1], x[2]]));
    const key = `${labels.path} ${labels.decision}`;
    out.set(key, (out.get(key) ?? 0) + Number(m[2]));
  }
  return out;
}

describe('bridge branches on the RoutedReader', () => {
  it('records one decision per read on each branch path, served by the replica for a bystander', async () => {
    const alice = newIdentity();
    const bob = newIdentity();
    const writer = new Pool({ connectionString: db.writerUrl, max: 1 });
    writer.on('error', () => undefined);
    for (const id of [alice, bob]) {
      await writer.query(`insert into relay_members (community_id, pubkey, role) select id, $1, 'member' from communities where host = 'localhost'`, [id.pubkey]);
    }
    await writer.end();
    const a = await RawClient.authed(relay.wsUrl, alice);
    const channel = randomUUID();
    expect(await a.publish(alice.sign({ kind: 9007, tags: [['h', channel], ['name', 'routed']] }))).toEqual([true, '']);
    const root = alice.sign({ kind: 9, content: 'routed root about quinces', tags: [['h', channel], ['p', bob.pubkey]] });
    expect(await a.publish(root)).toEqual([true, '']);
    for (let i = 0; i < 3; i++) {
      expect((await a.publish(alice.sign({ kind: 9, content: `routed reply ${i}`, tags: [['h', channel], ['e', root.id, '', 'root']] })))[0]).toBe(true);
    }
    a.close();
    // Bob is a bystander: any proved session that has replayed past these writes may serve him.
    await db.waitForReplica();

    const before = await decisions();
    const post = async (filters: unknown) => {
      const res = await fetch(`${relay.httpUrl}/query`, { method: 'POST', headers: { 'x-pubkey': bob.pubkey }, body: JSON.stringify(filters) });
      expect(res.status).toBe(200);
      return (await res.json()) as Array<{ id: string; kind: number; content: string }>;
    };
    const head = await post([{ top_level: true, '#h': [channel], limit: 1 }]);
    const bounds = JSON.parse(head.find((e) => e.kind === 39006)!.content);
    await post([{ top_level: true, '#h': [channel], limit: 1, until: bounds.next_cursor.created_at, before_id: bounds.next_cursor.id }]);
    expect((await post([{ feed_types: ['mentions'] }])).map((e) => e.id)).toEqual([root.id]);
    expect((await post([{ '#e': [root.id], depth_limit: 2 }])).filter((e) => e.kind === 9)).toHaveLength(3);
    expect((await post([{ search: 'quinces' }])).map((e) => e.id)).toEqual([root.id]);
    const after = await decisions();

    const delta = (key: string) => (after.get(key) ?? 0) - (before.get(key) ?? 0);
    for (const path of ['channel_head', 'bridge_feed', 'thread_head', 'bridge_search_hydrate', 'relay_membership']) {
      expect({ path, decisions: delta(`${path} replica`) + delta(`${path} writer`) }).toEqual({ path, decisions: path === 'relay_membership' ? 5 : 1 });
      expect({ path, replica: delta(`${path} replica`) }).toEqual({ path, replica: path === 'relay_membership' ? 5 : 1 });
    }
    // The cursor page of an old channel is covered by the fence wall only after ~965 s: a fresh
    // channel's cursor page must stay on the writer, and say so exactly once.
    expect(delta('channel_cursor writer') + delta('channel_cursor replica')).toBe(1);
  });
});
