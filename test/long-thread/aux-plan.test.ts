/**
 * Plan shape and results of the bridge's aux e-tag query (database.md §5.1, §8.6; seed 002),
 * captured from BridgeReadsRepository.referencing() itself: for a 188-id thread (root + 187
 * replies) among a few thousand background rows, EXPLAIN (FORMAT JSON) of that exact SQL and
 * parameters must probe the GIN tags index and must not walk a primary key (the early-stop plan
 * the MATERIALIZED fence exists to prevent). Its rows must equal a naive reference that filters
 * every row of the community in JavaScript, for 1, 100 and 188 ids and across keyset pages.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { CompiledQuery, Kysely, PostgresDialect } from 'kysely';
import { Pool } from 'pg';
import { AUX_KINDS } from '../../src/bridge/bridge-query.service.js';
import { BridgeReadsRepository } from '../../src/bridge/bridge-reads.repository.js';
import { DB } from '../../src/database/database.types.js';
import { ReadScope } from '../../src/events/read-scope.js';
import { createTestDatabase, TestDatabase } from '../harness/test-database.js';

const BACKGROUND_ROWS = 6000;
const REPLIES = 187;
const DAY = 86_400;
/** Keyset page size for the paging check: several pages, few enough round trips on a dirty GIN pending list. */
const PAGE = 40;
/** Every statement here probes a GIN pending list that holds the whole data set (~0.5 s at 188 ids). */
const SLOW_MS = 25_000;

interface Row {
  id: string;
  pubkey: string;
  at: number;
  kind: number;
  tags: string[][];
  channel: string | null;
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
const repo = new BridgeReadsRepository();
const communityId = randomUUID();
const thread = randomUUID();
const otherChannel = randomUUID();
const scope: ReadScope = { communityId, channels: [thread], includeGlobal: true };
const rows: Row[] = [];
let threadIds: string[] = [];

/** Root + replies in `thread`, reactions to them, plus background rows in three scopes over five months. */
function generate(now: number): void {
  const people = Array.from({ length: 40 }, hex32);
  const root: Row = { id: hex32(), pubkey: pick(people), at: now - 2 * DAY, kind: 9, tags: [['h', thread]], channel: thread, deleted: false };
  rows.push(root);
  const replies = Array.from({ length: REPLIES }, (_, i): Row => ({
    id: hex32(),
    pubkey: pick(people),
    at: root.at + 60 + i * 30 + Math.floor(rand() * 20),
    kind: 9,
    tags: [['h', thread], ['e', root.id, '', 'root'], ['p', root.pubkey]],
    channel: thread,
    deleted: false,
  }));
  rows.push(...replies);
  threadIds = [root.id, ...replies.map((r) => r.id)];
  const background: Row[] = [];
  for (let i = 0; i < BACKGROUND_ROWS; i++) {
    const referenced = background.length > 0 && rand() < 0.6 ? pick(background).id : undefined;
    const kind = pick([9, 9, 9, 7, 7, 5, 1, 40003, 9005]);
    const channel = pick<string | null>([thread, thread, otherChannel, null]);
    background.push({
      id: hex32(),
      pubkey: pick(people),
      at: now - Math.floor(rand() * 150 * DAY),
      kind,
      tags: [...(channel ? [['h', channel]] : []), ...(referenced ? [['e', referenced]] : [])],
      channel,
      deleted: rand() < 0.03,
    });
  }
  rows.push(...background);
  // References to the thread: reactions, edits, deletions (some deleted, some out of scope, some global).
  for (let i = 0; i < 400; i++) {
    const target = pick(threadIds);
    const channel = pick<string | null>([thread, thread, thread, otherChannel, null]);
    const marker = rand() < 0.1 ? [['e', target, '', 'reply']] : rand() < 0.05 ? [[target, 'e']] : [['e', target]];
    rows.push({
      id: hex32(),
      pubkey: pick(people),
      at: root.at + Math.floor(rand() * DAY),
      kind: pick([7, 7, 7, 5, 9005, 40003, 9, 1]),
      tags: [...(channel ? [['h', channel]] : []), ...marker, ['p', root.pubkey]],
      channel,
      deleted: rand() < 0.05,
    });
  }
}

async function insertRows(): Promise<void> {
  await pool.query(`insert into communities (id, host) values ($1, $2)`, [communityId, `aux-plan-${randomBytes(4).toString('hex')}.example`]);
  for (let i = 0; i < rows.length; i += 2000) {
    const batch = rows.slice(i, i + 2000);
    await pool.query(
      `insert into events (community_id, id, pubkey, created_at, kind, tags, content, sig, channel_id, deleted_at)
       select $1::uuid, decode(u.id, 'hex'), decode(u.pk, 'hex'), to_timestamp(u.at), u.kind, u.tags::jsonb, '',
              decode(repeat('00', 64), 'hex'), u.channel, case when u.deleted then now() end
         from unnest($2::text[], $3::text[], $4::bigint[], $5::int[], $6::text[], $7::uuid[], $8::bool[])
              as u(id, pk, at, kind, tags, channel, deleted)`,
      [
        communityId,
        batch.map((r) => r.id),
        batch.map((r) => r.pubkey),
        batch.map((r) => r.at),
        batch.map((r) => r.kind),
        batch.map((r) => JSON.stringify(r.tags)),
        batch.map((r) => r.channel),
        batch.map((r) => r.deleted),
      ],
    );
  }
  await pool.query('analyze events');
}

/**
 * The reference: every row of the community filtered in JavaScript with the query's semantics:
 * kinds, not deleted, in scope, and jsonb containment of `[["e", id]]` (some tag array holds
 * both "e" and the id, in any position), ordered by created_at then id.
 */
function reference(ids: readonly string[], kinds: readonly number[]): string[] {
  const wanted = new Set(ids);
  const visible = (r: Row) => r.channel === null || (scope.channels as string[]).includes(r.channel);
  return rows
    .filter((r) => !r.deleted && kinds.includes(r.kind) && visible(r) && r.tags.some((t) => t.includes('e') && t.some((v) => wanted.has(v))))
    .sort((a, b) => a.at - b.at || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
    .map((r) => r.id);
}

function sample(from: readonly string[], n: number): string[] {
  const copy = [...from];
  for (let i = copy.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [copy[i], copy[j]] = [copy[j], copy[i]];
  }
  return copy.slice(0, n);
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

/** AUX_PLAN_DEBUG=1: EXPLAIN ANALYZE of the captured query and of the spec's whole-select fence, dirty then clean. */
async function debugPlans(query: CompiledQuery): Promise<void> {
  const probes = threadIds.map((id) => JSON.stringify([['e', id]]));
  const fenced = `with m as materialized (
      select e.id, e.created_at from events e
       where e.community_id = $1::uuid and e.deleted_at is null and e.kind = any($2::int[])
         and e.tags @> any($3::jsonb[]) and (e.channel_id is null or e.channel_id = any($4::uuid[])))
    select * from m order by created_at asc, id asc limit 1000`;
  for (const vacuum of [false, true]) {
    if (vacuum) await pool.query('vacuum analyze events');
    for (const [label, text, params] of [
      ['repository', query.sql, [...query.parameters]],
      ['whole-select fence, jsonb[] bound', fenced, [communityId, AUX_KINDS, probes, [thread]]],
    ] as const) {
      const { rows: a } = await pool.query(`explain (analyze, buffers) ${text}`, params as unknown[]);
      console.log(`${label}, vacuum=${vacuum}\n${a.map((r) => r['QUERY PLAN']).join('\n')}`);
    }
  }
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
  await insertRows();
}, SLOW_MS);

afterAll(async () => {
  await kysely?.destroy();
  await db?.drop();
});

describe('aux e-tag query plan (188 ids)', () => {
  let plan: PlanNode[];
  let ginIndexes: Set<string>;

  beforeAll(async () => {
    captured = [];
    const found = await repo.referencing(kysely, scope, threadIds, AUX_KINDS);
    expect(found.length).toBeGreaterThan(0);
    // The page runs inside the deadline's nested transaction; the read itself is the one statement on `events`.
    captured = captured.filter((q) => /from events e/i.test(q.sql));
    expect(captured).toHaveLength(1);
    const [query] = captured;
    const { rows: explained } = await pool.query<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>(`explain (format json) ${query.sql}`, [...query.parameters]);
    plan = flatten(explained[0]['QUERY PLAN'][0].Plan);
    const { rows: children } = await pool.query<{ name: string }>(
      `select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid
        where i.inhparent = 'idx_events_tags_gin'::regclass`,
    );
    ginIndexes = new Set(['idx_events_tags_gin', ...children.map((c) => c.name)]);
    if (process.env.AUX_PLAN_DEBUG) await debugPlans(query);
  }, SLOW_MS);

  it('binds the id set as one jsonb[] parameter inside a MATERIALIZED fence, with ORDER/LIMIT outside it', () => {
    const [query] = captured;
    expect(query.sql).toMatch(/with m as materialized \(/i);
    expect(query.sql).toMatch(/tags @> any\(\$\d+::jsonb\[\]\)/i);
    expect(query.sql).toMatch(/\)\s*select[\s\S]*from m order by[\s\S]*limit/i);
    expect(query.parameters.filter((p) => Array.isArray(p) && p.length === threadIds.length)).toHaveLength(1);
  });

  it('probes the GIN tags index with a Bitmap Index Scan', () => {
    const gin = plan.filter((n) => n['Node Type'] === 'Bitmap Index Scan' && ginIndexes.has(n['Index Name'] ?? ''));
    expect(gin.length).toBeGreaterThan(0);
  });

  it('does not walk a primary key (the early-stop plan), in either direction', () => {
    const pkeyWalks = plan.filter((n) => /Index (Only )?Scan/.test(n['Node Type']) && /_pkey$/.test(n['Index Name'] ?? ''));
    expect(pkeyWalks.map((n) => `${n['Node Type']} ${n['Scan Direction']} on ${n['Index Name']}`)).toEqual([]);
  });
});

describe('aux e-tag query results against a naive reference', () => {
  it.each([
    ['the whole 188-id thread', () => threadIds],
    ['100 ids, thread and background mixed', () => sample([...sample(threadIds, 60), ...sample(rows.slice(REPLIES + 1).map((r) => r.id), 40)], 100)],
    ['1 id', () => [pick(threadIds)]],
    ['ids nothing references', () => [hex32(), hex32()]],
  ])(
    'matches for %s',
    async (_label, ids) => {
      const set = ids();
      const got = await repo.referencing(kysely, scope, set, AUX_KINDS);
      expect(got.map((e) => e.id)).toEqual(reference(set, AUX_KINDS));
    },
    SLOW_MS,
  );

  it('matches across keyset pages and for the second-hop kinds', async () => {
    const want = reference(threadIds, AUX_KINDS);
    expect(want.length).toBeGreaterThan(3 * PAGE);
    const got = await repo.referencing(kysely, scope, threadIds, AUX_KINDS, PAGE);
    expect(got.map((e) => e.id)).toEqual(want);
    const second = await repo.referencing(kysely, scope, threadIds, [5, 9005], PAGE);
    expect(second.map((e) => e.id)).toEqual(reference(threadIds, [5, 9005]));
  }, SLOW_MS);

  it('answers an empty id set without a query', async () => {
    captured = [];
    expect(await repo.referencing(kysely, scope, [], AUX_KINDS)).toEqual([]);
    // No query at all, not even the deadline's transaction.
    expect(captured).toEqual([]);
  });
});
