/**
 * The REQ hot path sends each history row as JSON built around the tags text Postgres prints
 * (StoredEvent). Against a real Postgres: what goes on the wire parses back to the stored event,
 * which still verifies (id and signature) for a client, with tags and content that need escaping.
 */
import { randomUUID } from 'node:crypto';
import { Kysely, PostgresDialect } from 'kysely';
import { finalizeEvent, generateSecretKey, verifyEvent, type Event as NostrEvent } from 'nostr-tools/pure';
import { Pool } from 'pg';
import { DB } from '../../packages/read-path/src/database/database.types.js';
import { EventReadRepository } from '../../src/events/event-read.repository.js';
import { communityWide } from '../../src/channels/read-scope.js';
import { eventJson } from '../../src/events/stored-event.js';
import { createTestDatabase, TestDatabase } from '../harness/test-database.js';

let db: TestDatabase;
let pool: Pool;
let kysely: Kysely<DB>;
const communityId = randomUUID();

beforeAll(async () => {
  db = await createTestDatabase();
  pool = new Pool({ connectionString: db.writerUrl, max: 2 });
  pool.on('error', () => undefined);
  kysely = new Kysely<DB>({ dialect: new PostgresDialect({ pool }) });
  await pool.query(`insert into communities (id, host) values ($1, $2)`, [communityId, `wire-${communityId}.test`]);
});

afterAll(async () => {
  await kysely?.destroy();
  await db?.drop();
});

async function store(ev: NostrEvent): Promise<void> {
  await pool.query(
    `insert into events (community_id, id, pubkey, created_at, kind, tags, content, sig)
     values ($1, decode($2, 'hex'), decode($3, 'hex'), to_timestamp($4), $5, $6, $7, decode($8, 'hex'))`,
    [communityId, ev.id, ev.pubkey, ev.created_at, ev.kind, JSON.stringify(ev.tags), ev.content, ev.sig],
  );
}

it('sends history rows that parse back to the stored, verifiable event', async () => {
  const sk = generateSecretKey();
  const now = Math.floor(Date.now() / 1000);
  const events = [
    finalizeEvent({ kind: 1, created_at: now, tags: [['t', 'say "hi"'], ['x', 'back\\slash', 'tab\tnew\nline\u0001'], ['u', 'é 😀 \u2028']], content: 'a "quoted"\nline \\ 😀 \u0007' }, sk),
    finalizeEvent({ kind: 1, created_at: now - 1, tags: [], content: '' }, sk),
    finalizeEvent({ kind: 1, created_at: now - 2, tags: [['empty', ''], ['num', '1e3'], ['nested', '[["t","x"]]']], content: '{"json": true}' }, sk),
  ];
  for (const ev of events) await store(ev);
  const rows = await new EventReadRepository().query(kysely, communityWide(communityId), { kinds: [1], tags: {}, extensions: {} }, 10);
  expect(rows).toHaveLength(events.length);
  rows.forEach((row, i) => {
    const sent = JSON.parse(eventJson(row)) as NostrEvent;
    expect(sent).toEqual(JSON.parse(JSON.stringify(events[i])));
    expect(verifyEvent(sent)).toBe(true);
  });
});
