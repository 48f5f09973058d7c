/**
 * E-tag reads through `event_refs` (migration 0016; database.md §5.1, §8.6; seed 002), on the real
 * pair, with every statement captured from the repositories themselves:
 *
 * - ingest (EventWriteRepository) fills `event_refs` with exactly the rows the tag rule gives, for
 *   odd tag shapes too, a deleted event's rows go with it (migration 0019), and migration 0016
 *   rebuilt from scratch (down, up with its backfill) restores exactly the same rows;
 * - the aux hop (BridgeReadsRepository.referencing) and the generic `#e` read and count
 *   (EventReadRepository) return exactly what the seed's GIN form returns, and what a naive
 *   JavaScript reference returns, after soft deletes, NIP-09 deletions (by id and by coordinate)
 *   and addressable replacement, across communities, pages and limits. The GIN form is reached
 *   through the same code: a value event_refs cannot hold (not lowercase 64-hex) sends the whole
 *   read down the seed's `tags @> any($::jsonb[])` path, and matches nothing itself;
 * - EXPLAIN (FORMAT JSON) of the 188-id statements: event_refs is probed through its primary key,
 *   `events` only through primary-key probes walked forward, and nothing is scanned sequentially
 *   (the fallback form still probes the GIN index and walks no primary key).
 *
 * A bulk "noise" community (plain SQL, refs filled by the migration's derivation) gives the
 * tables a size at which a sequential scan would be a real choice for the planner.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { CompiledQuery, Kysely, PostgresDialect, sql } from 'kysely';
import { Pool } from 'pg';
import * as refsMigration from '../../packages/read-path/migrations/0016_event_refs.js';
import { AUX_KINDS, AUX_SECOND_HOP_KINDS } from '../../src/bridge/bridge-params.js';
import { BridgeReadsRepository } from '../../src/bridge/bridge-reads.repository.js';
import { NostrFilter } from '../../src/nostr/nostr.types.js';
import { DB } from '../../packages/read-path/src/database/database.types.js';
import { EventReadRepository } from '../../src/events/event-read.repository.js';
import { EventWriteRepository } from '../../src/events/event-write.repository.js';
import { ReadScope } from '../../src/channels/read-scope.js';
import { StoredEventInput } from '../../src/events/stored-event.js';
import { createTestDatabase, TestDatabase } from '../harness/test-database.js';

const BACKGROUND_ROWS = 6000;
const NOISE_ROWS = 150_000;
const REPLIES = 187;
const DAY = 86_400;
/** Keyset page size for the paging check: several pages per id set. */
const PAGE = 40;
const SLOW_MS = 60_000;
/** Not lowercase 64-hex: event_refs cannot hold it, so a read carrying it takes the GIN form. */
const NOT_AN_ID = 'E'.repeat(64);
const ARTICLE = 30023;

interface Row {
  id: string;
  pubkey: string;
  at: number;
  kind: number;
  tags: string[][];
  channel: string | null;
  dTag: string | null;
  deleted: boolean;
}

/** Deterministic PRNG (mulberry32), so a failing data set can be reproduced from its seed. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const SEED = Number(process.env.AUX_PLAN_SEED ?? 20_021);
const rand = prng(SEED);
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)];
const hex32 = () => randomBytes(32).toString('hex');

let db: TestDatabase;
let pool: Pool;
let kysely: Kysely<DB>;
let captured: CompiledQuery[] = [];
const bridgeReads = new BridgeReadsRepository();
const eventReads = new EventReadRepository();
const writes = new EventWriteRepository();
const communityId = randomUUID();
const otherCommunity = randomUUID();
const noiseCommunity = randomUUID();
const thread = randomUUID();
const otherChannel = randomUUID();
const scope: ReadScope = { communityId, channels: [thread], includeGlobal: true };
const rows: Row[] = [];
const otherRows: Row[] = [];
const people = Array.from({ length: 40 }, hex32);
let threadIds: string[] = [];

/** A tag that references `target`, in one of the shapes containment and the positional form see differently. */
function referenceTag(target: string): string[] {
  const r = rand();
  if (r < 0.55) return ['e', target];
  if (r < 0.7) return ['e', target, 'wss://relay.example', 'reply'];
  if (r < 0.78) return [target, 'e']; // reversed: containment matches, NIP-01 position does not
  if (r < 0.84) return ['p', target, 'e']; // "e" as a later element: containment only
  if (r < 0.9) return ['q', target]; // no "e": no reference at all
  if (r < 0.95) return ['e', target.toUpperCase()]; // uppercase hex: neither form matches a lowercase id
  return ['e', target, target]; // the same id twice in one tag
}

function row(partial: Partial<Row> & Pick<Row, 'at' | 'kind' | 'tags'>): Row {
  const r = { id: hex32(), pubkey: pick(people), channel: null, dTag: null, deleted: false, ...partial };
  // NIP-09: a deletion cannot be deleted (softDeleteByIds skips kind 5).
  if (r.kind === 5) r.deleted = false;
  return r;
}

/** Root + replies in `thread`, references to them in many shapes, background rows, article versions. */
function generate(now: number): void {
  const root = row({ at: now - 2 * DAY, kind: 9, tags: [['h', thread]], channel: thread });
  rows.push(root);
  const replies = Array.from({ length: REPLIES }, (_, i) =>
    row({ at: root.at + 60 + i * 30 + Math.floor(rand() * 20), kind: 9, tags: [['h', thread], ['e', root.id, '', 'root'], ['p', root.pubkey]], channel: thread }),
  );
  rows.push(...replies);
  threadIds = [root.id, ...replies.map((r) => r.id)];
  const background: Row[] = [];
  for (let i = 0; i < BACKGROUND_ROWS; i++) {
    const referenced = background.length > 0 && rand() < 0.6 ? pick(background).id : undefined;
    const channel = pick<string | null>([thread, thread, otherChannel, null]);
    background.push(
      row({
        at: now - Math.floor(rand() * 150 * DAY),
        kind: pick([9, 9, 9, 7, 7, 5, 1, 40003, 9005]),
        tags: [...(channel ? [['h', channel]] : []), ...(referenced ? [referenceTag(referenced)] : [])],
        channel,
        deleted: rand() < 0.03,
      }),
    );
  }
  rows.push(...background);
  // References to the thread: reactions, edits, deletions; some deleted, out of scope, global,
  // some referencing several thread ids at once (in one tag or in several).
  for (let i = 0; i < 500; i++) {
    const channel = pick<string | null>([thread, thread, thread, otherChannel, null]);
    const refs = rand() < 0.2 ? [referenceTag(pick(threadIds)), referenceTag(pick(threadIds))] : [referenceTag(pick(threadIds))];
    if (rand() < 0.05) refs.push(['e', pick(threadIds), pick(threadIds)]);
    rows.push(
      row({
        at: root.at + Math.floor(rand() * DAY),
        kind: pick([7, 7, 7, 5, 9005, 40003, 9, 1]),
        tags: [...(channel ? [['h', channel]] : []), ...refs, ['p', root.pubkey]],
        channel,
        deleted: rand() < 0.05,
      }),
    );
  }
  // Addressable articles citing thread messages: three versions per coordinate, replaced in order.
  for (let i = 0; i < 20; i++) {
    const pubkey = pick(people);
    for (let v = 0; v < 3; v++) {
      rows.push(row({ pubkey, at: root.at + 3600 * (i + 1) + v, kind: ARTICLE, dTag: `article-${i}`, tags: [['d', `article-${i}`], ['e', pick(threadIds)]] }));
    }
  }
  // Another community citing the same ids: never visible here.
  for (let i = 0; i < 300; i++) {
    otherRows.push(row({ at: root.at + Math.floor(rand() * DAY), kind: pick([7, 5, 9005, 40003, 9]), tags: [['e', pick(threadIds)]] }));
  }
}

function storedInput(r: Row): StoredEventInput {
  return {
    event: { id: r.id, pubkey: r.pubkey, created_at: r.at, kind: r.kind, tags: r.tags, content: '', sig: '00'.repeat(64) },
    channelId: r.channel,
    dTag: r.dTag,
    thread: null,
    mentions: [],
  };
}

/** Through the write path (events + event_refs in one transaction per batch), then the deletions. */
async function ingest(community: string, batch: readonly Row[]): Promise<void> {
  await pool.query(`insert into communities (id, host) values ($1, $2)`, [community, `aux-plan-${randomBytes(4).toString('hex')}.example`]);
  for (let i = 0; i < batch.length; i += 500) {
    const items = batch.slice(i, i + 500).map(storedInput);
    await kysely.transaction().execute(async (tx) => {
      const inserted = await writes.insertEvents(tx, community, items);
      expect(inserted.size).toBe(items.length);
      await writes.insertRefs(tx, community, items);
    });
  }
}

/** Soft deletes (NIP-09 by id), addressable replacement and a NIP-09 coordinate deletion, mirrored in the model. */
async function applyDeletions(): Promise<void> {
  const byAuthor = new Map<string, string[]>();
  for (const r of rows) if (r.deleted) byAuthor.set(r.pubkey, [...(byAuthor.get(r.pubkey) ?? []), r.id]);
  await kysely.transaction().execute(async (tx) => {
    for (const [author, ids] of byAuthor) await writes.softDeleteByIds(tx, communityId, author, ids);
    for (let i = 0; i < 20; i++) {
      const versions = rows.filter((r) => r.dTag === `article-${i}`);
      const newest = versions[versions.length - 1];
      await writes.supersedeVersions(tx, communityId, newest.pubkey, ARTICLE, newest.dTag, newest.id);
      for (const v of versions.slice(0, -1)) v.deleted = true;
    }
    const gone = rows.filter((r) => r.dTag === 'article-0');
    await writes.softDeleteCoordinate(tx, communityId, gone[0].pubkey, ARTICLE, 'article-0', gone[2].at);
    for (const v of gone) v.deleted = true;
  });
}

/** Many rows in a third community, spread over every partition up to now, loaded with plain SQL; their refs come from the migration's derivation. */
async function loadNoise(): Promise<void> {
  await pool.query(`insert into communities (id, host) values ($1, 'aux-plan-noise.example')`, [noiseCommunity]);
  await pool.query(
    `insert into events (community_id, id, pubkey, created_at, kind, tags, content, sig)
     select $1::uuid, sha256(('n' || g)::bytea), sha256('author'::bytea), timestamptz '2025-06-01 00:00:00+00' + (g::float8 / $2::int) * (now() - timestamptz '2025-06-01 00:00:00+00'),
            case when g % 3 = 0 then 7 else 9 end,
            jsonb_build_array(jsonb_build_array('e', encode(sha256(('n' || (g / 2))::bytea), 'hex'))),
            '', decode(repeat('00', 64), 'hex')
       from generate_series(1, $2::int) g`,
    [noiseCommunity, NOISE_ROWS],
  );
  await refsMigration.fillEventRefs(kysely, noiseCommunity);
}

/** Containment semantics of the aux hop: some tag array holds both "e" and the id, in any position. */
function auxReference(ids: readonly string[], kinds: readonly number[]): string[] {
  const wanted = new Set(ids);
  return rows
    .filter((r) => !r.deleted && kinds.includes(r.kind) && visible(r) && r.tags.some((t) => t.includes('e') && t.some((v) => wanted.has(v))))
    .sort((a, b) => a.at - b.at || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
    .map((r) => r.id);
}

/** NIP-01 semantics of a `#e` filter: element 0 is "e" and element 1 one of the ids; newest first. */
function filterReference(ids: readonly string[], kinds: readonly number[] | undefined, limit: number): string[] {
  const wanted = new Set(ids);
  return rows
    .filter((r) => !r.deleted && (!kinds || kinds.includes(r.kind)) && visible(r) && r.tags.some((t) => t[0] === 'e' && wanted.has(t[1])))
    .sort((a, b) => b.at - a.at || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
    .slice(0, limit)
    .map((r) => r.id);
}

function visible(r: Row): boolean {
  return r.channel === null || (scope.channels as string[]).includes(r.channel);
}

function sample(from: readonly string[], n: number): string[] {
  const copy = [...from];
  for (let i = copy.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [copy[i], copy[j]] = [copy[j], copy[i]];
  }
  return copy.slice(0, n);
}

function eFilter(ids: readonly string[], kinds?: number[]): NostrFilter {
  return { tags: { e: [...ids] }, extensions: {}, ...(kinds ? { kinds } : {}) };
}

interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  'Scan Direction'?: string;
  'Relation Name'?: string;
  Plans?: PlanNode[];
}

function flatten(node: PlanNode): PlanNode[] {
  return [node, ...(node.Plans ?? []).flatMap(flatten)];
}

async function explain(query: CompiledQuery): Promise<PlanNode[]> {
  const { rows: explained } = await pool.query<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>(`explain (format json) ${query.sql}`, [...query.parameters]);
  if (process.env.AUX_PLAN_DEBUG) {
    const { rows: text } = await pool.query(`explain (analyze, buffers) ${query.sql}`, [...query.parameters]);
    console.log(text.map((r) => r['QUERY PLAN']).join('\n'));
  }
  return flatten(explained[0]['QUERY PLAN'][0].Plan);
}

/** Runs `read` and returns the one statement it sent that reads `events` or `event_refs`. */
async function captureRead(read: () => Promise<unknown>): Promise<CompiledQuery> {
  captured = [];
  await read();
  const reads = captured.filter((q) => /from "?(events|event_refs)"?\s/i.test(q.sql));
  expect(reads).toHaveLength(1);
  return reads[0];
}

const describeNode = (n: PlanNode) => `${n['Node Type']} ${n['Scan Direction'] ?? ''} on ${n['Index Name'] ?? n['Relation Name'] ?? '?'}`;

/** What the reference-table form must look like: a btree probe of event_refs, keyed forward probes of events, no scan of either. */
function expectRefsPlan(plan: PlanNode[], gin: Set<string>): void {
  expect(plan.filter((n) => /Index (Only )?Scan/.test(n['Node Type']) && n['Index Name'] === 'event_refs_pkey').length).toBeGreaterThan(0);
  expect(plan.filter((n) => /Seq Scan/.test(n['Node Type'])).map(describeNode)).toEqual([]);
  expect(plan.filter((n) => n['Scan Direction'] === 'Backward').map(describeNode)).toEqual([]);
  expect(plan.filter((n) => /Bitmap/.test(n['Node Type']) && gin.has(n['Index Name'] ?? '')).map(describeNode)).toEqual([]);
  const eventScans = plan.filter((n) => /Scan/.test(n['Node Type']) && /^events/.test(n['Relation Name'] ?? ''));
  expect(eventScans.length).toBeGreaterThan(0);
  // Keyed probes (the primary key or the (community_id, id, created_at) index), never a scan of a whole partition.
  expect(eventScans.filter((n) => !/^Index (Only )?Scan$/.test(n['Node Type'])).map(describeNode)).toEqual([]);
}

beforeAll(async () => {
  db = await createTestDatabase();
  pool = new Pool({ connectionString: db.writerUrl, max: 2 });
  kysely = new Kysely<DB>({
    dialect: new PostgresDialect({ pool }),
    log: (event) => {
      if (event.level === 'query') captured.push(event.query);
    },
  });
  generate(Math.floor(Date.now() / 1000));
  await ingest(communityId, rows);
  await ingest(otherCommunity, otherRows);
  await applyDeletions();
  await loadNoise();
  await pool.query('vacuum analyze events');
  await pool.query('vacuum analyze event_refs');
}, 2 * SLOW_MS);

afterAll(async () => {
  await kysely?.destroy();
  await db?.drop();
});

describe('event_refs contents', () => {
  it('ingest writes exactly the rows the migration derives from tags, and a deleted event keeps none', async () => {
    const snapshot = async (community?: string) => {
      const only = community ? sql`where community_id = ${community}::uuid` : sql``;
      const { rows: refs } = await sql<{ r: string }>`
        select community_id || ':' || encode(ref_id, 'hex') || ':' || encode(event_id, 'hex') || ':' || extract(epoch from event_created_at)::bigint || ':' || event_kind as r
          from event_refs ${only} order by 1`.execute(kysely);
      return refs.map((r) => r.r);
    };
    const ingested = await snapshot(communityId);
    // The rule on the model: reversed and later-"e" shapes count, "q" and uppercase hex do not.
    const expected = rows
      .filter((r) => !r.deleted)
      .flatMap((r) => [...new Set(r.tags.filter((t) => t.includes('e')).flatMap((t) => t.filter((v) => /^[0-9a-f]{64}$/.test(v))))].map((ref) => `${communityId}:${ref}:${r.id}:${r.at}:${r.kind}`))
      .sort();
    expect(ingested).toEqual(expected);
    // Migration 0016 rebuilt from scratch (down, then up with its backfill) gives every community's rows back.
    const everything = await snapshot();
    await refsMigration.down(kysely);
    await refsMigration.up(kysely);
    await sql`analyze event_refs`.execute(kysely);
    expect(await snapshot()).toEqual(everything);
  }, SLOW_MS);
});

describe('aux e-tag query plan (188 ids)', () => {
  let gin: Set<string>;

  beforeAll(async () => {
    const { rows: children } = await pool.query<{ name: string }>(
      `select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid where i.inhparent = 'idx_events_tags_gin'::regclass`,
    );
    gin = new Set(['idx_events_tags_gin', ...children.map((c) => c.name)]);
  });

  it('binds the id set as one bytea[] parameter probed id by id, fenced, with ORDER/LIMIT outside the fence', async () => {
    const query = await captureRead(() => bridgeReads.referencing(kysely, scope, threadIds, AUX_KINDS));
    expect(query.sql).toMatch(/from unnest\(\$\d+::bytea\[\]\) as q\(ref_id\)/i);
    expect(query.sql).toMatch(/from event_refs rf/i);
    expect(query.sql).toMatch(/m as materialized \(/i);
    expect(query.sql).toMatch(/\)\s*select[\s\S]*from m e order by[\s\S]*limit/i);
    expect(query.sql).not.toMatch(/@>/);
    expect(query.parameters.filter((p) => Array.isArray(p) && p.length === threadIds.length)).toHaveLength(1);
  });

  it('probes event_refs by its primary key and events by forward primary-key lookups, with no sequential scan', async () => {
    const query = await captureRead(() => bridgeReads.referencing(kysely, scope, threadIds, AUX_KINDS));
    expectRefsPlan(await explain(query), gin);
  });

  it('plans the generic #e read and count the same way', async () => {
    const read = await captureRead(() => eventReads.query(kysely, scope, eFilter(threadIds), 200));
    expect(read.sql).toMatch(/from event_refs rf/i);
    expectRefsPlan(await explain(read), gin);
    const count = await captureRead(() => eventReads.count(kysely, scope, eFilter(threadIds, AUX_KINDS)));
    expectRefsPlan(await explain(count), gin);
  });

  it('keeps the seed GIN form for a value event_refs cannot hold: GIN probes, no primary-key walk', async () => {
    const query = await captureRead(() => bridgeReads.referencing(kysely, scope, [...threadIds, NOT_AN_ID], AUX_KINDS));
    expect(query.sql).toMatch(/tags @> any\(\$\d+::jsonb\[\]\)/i);
    const plan = await explain(query);
    expect(plan.filter((n) => n['Node Type'] === 'Bitmap Index Scan' && gin.has(n['Index Name'] ?? '')).length).toBeGreaterThan(0);
    const pkeyWalks = plan.filter((n) => /Index (Only )?Scan/.test(n['Node Type']) && /_pkey$/.test(n['Index Name'] ?? ''));
    expect(pkeyWalks.map(describeNode)).toEqual([]);
  });
});

describe('reference-table form against the seed GIN form and a naive reference', () => {
  const idSets: Array<[string, () => string[]]> = [
    ['the whole 188-id thread', () => threadIds],
    ['100 ids, thread and background mixed', () => sample([...sample(threadIds, 60), ...sample(rows.slice(REPLIES + 1).map((r) => r.id), 40)], 100)],
    ['1 id', () => [pick(threadIds)]],
    ['ids nothing references', () => [hex32(), hex32()]],
  ];

  it.each(idSets)(
    'aux hop matches for %s',
    async (_label, ids) => {
      const set = ids();
      const byRefs = (await bridgeReads.referencing(kysely, scope, set, AUX_KINDS)).map((e) => e.id);
      const byGin = (await bridgeReads.referencing(kysely, scope, [...set, NOT_AN_ID], AUX_KINDS)).map((e) => e.id);
      expect(byRefs).toEqual(byGin);
      expect(byRefs).toEqual(auxReference(set, AUX_KINDS));
    },
    SLOW_MS,
  );

  it('aux hop matches across keyset pages and for the second-hop kinds', async () => {
    const want = auxReference(threadIds, AUX_KINDS);
    expect(want.length).toBeGreaterThan(3 * PAGE);
    expect((await bridgeReads.referencing(kysely, scope, threadIds, AUX_KINDS, PAGE)).map((e) => e.id)).toEqual(want);
    expect((await bridgeReads.referencing(kysely, scope, [...threadIds, NOT_AN_ID], AUX_KINDS, PAGE)).map((e) => e.id)).toEqual(want);
    const second = await bridgeReads.referencing(kysely, scope, threadIds, AUX_SECOND_HOP_KINDS, PAGE);
    expect(second.map((e) => e.id)).toEqual(auxReference(threadIds, AUX_SECOND_HOP_KINDS));
  }, SLOW_MS);

  it.each([10, 50, 100, 200])(
    'generic #e read and count match at limit %i, with and without kinds',
    async (limit) => {
      for (const kinds of [undefined, AUX_KINDS, [ARTICLE]]) {
        const byRefs = (await eventReads.query(kysely, scope, eFilter(threadIds, kinds), limit)).map((e) => e.id);
        const byGin = (await eventReads.query(kysely, scope, eFilter([...threadIds, NOT_AN_ID], kinds), limit)).map((e) => e.id);
        expect(byRefs).toEqual(byGin);
        expect(byRefs).toEqual(filterReference(threadIds, kinds, limit));
        const counted = await eventReads.count(kysely, scope, eFilter(threadIds, kinds));
        expect(counted).toBe(await eventReads.count(kysely, scope, eFilter([...threadIds, NOT_AN_ID], kinds)));
        expect(counted).toBe(filterReference(threadIds, kinds, Infinity).length);
      }
    },
    SLOW_MS,
  );

  it('sees nothing of the other communities that reference the same ids', async () => {
    const otherScope: ReadScope = { communityId: otherCommunity, channels: 'any', includeGlobal: true };
    const got = await bridgeReads.referencing(kysely, otherScope, threadIds, AUX_KINDS);
    expect(got.map((e) => e.id).sort()).toEqual(otherRows.filter((r) => AUX_KINDS.includes(r.kind)).map((r) => r.id).sort());
  }, SLOW_MS);

  it('answers an empty id set without a query', async () => {
    captured = [];
    expect(await bridgeReads.referencing(kysely, scope, [], AUX_KINDS)).toEqual([]);
    // No query at all, not even the deadline's transaction.
    expect(captured).toEqual([]);
  });
});
