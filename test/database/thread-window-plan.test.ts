/**
 * Results and plan shapes of the thread-window SQL (ThreadWindowRepository), on a community
 * with one long thread among many others: the page walks the root's thread index to its LIMIT
 * (no full sort, no sequential scan), pages older along the keyset without gaps or repeats, and
 * the aux page probes event_refs once per target inside its MATERIALIZED fences.
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { CompiledQuery, Kysely, PostgresDialect } from 'kysely';
import { Pool } from 'pg';
import { fillEventRefs } from '../../packages/read-path/migrations/0016_event_refs.js';
import { ThreadWindowRepository, WindowCursor } from '../../src/bridge/thread-window.repository.js';
import { DB } from '../../packages/read-path/src/database/database.types.js';
import { createTestDatabase, TestDatabase } from '../harness/test-database.js';

interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  'Relation Name'?: string;
  'Actual Loops': number;
  'Actual Rows': number;
  Plans?: PlanNode[];
}

/** Executed nodes of a type. */
function executed(plan: PlanNode[], type: string): PlanNode[] {
  return plan.filter((n) => n['Node Type'] === type && n['Actual Loops'] > 0);
}

/** Executed sequential scans of tables that hold rows (scanning an empty partition costs nothing). */
function seqScansOfRows(plan: PlanNode[]): string[] {
  return executed(plan, 'Seq Scan').map((n) => n['Relation Name'] ?? '?').filter((r) => populated.has(r));
}

const THREADS = 500;
const REPLIES = 50; // per thread, except thread 1 (the one read): LONG replies
const LONG = 3000;
let db: TestDatabase;
let pool: Pool;
let kysely: Kysely<DB>;
let captured: CompiledQuery[] = [];
const communityId = randomUUID();
const channelId = randomUUID();
const repo = new ThreadWindowRepository();
/** The reader whose visibility rules the window applies (any key: the thread holds no gated kinds). */
const READER = 'ab'.repeat(32);
let rootId: string;
let populated: Set<string>;

function flatten(node: PlanNode): PlanNode[] {
  return [node, ...(node.Plans ?? []).flatMap(flatten)];
}

async function planOf(match: RegExp): Promise<PlanNode[]> {
  const query = captured.filter((q) => match.test(q.sql)).pop()!;
  const { rows } = await pool.query(`explain (analyze, format json) ${query.sql}`, [...query.parameters]);
  return flatten(rows[0]['QUERY PLAN'][0].Plan);
}

beforeAll(async () => {
  db = await createTestDatabase();
  pool = new Pool({ connectionString: db.writerUrl, max: 2 });
  pool.on('error', () => undefined);
  kysely = new Kysely<DB>({ dialect: new PostgresDialect({ pool }), log: (e) => void (e.level === 'query' && captured.push(e.query)) });
  await pool.query(`insert into communities (id, host) values ($1, $2)`, [communityId, `tw-${communityId}.test`]);
  await pool.query(`insert into channels (community_id, id, name) values ($1, $2, 'threads')`, [communityId, channelId]);
  // Event (t, r): r = 0 is thread t's root, r > 0 its replies; replies share seconds in pairs.
  await pool.query(
    `insert into events (community_id, id, pubkey, created_at, kind, tags, content, sig, channel_id)
     select $1, decode(md5(t::text || ':' || r), 'hex') || decode(md5(r::text || ':' || t), 'hex'), $2,
            to_timestamp(1700000000 + t * 100 + (r + 1) / 2), 9,
            case when r = 0 then '[]'::jsonb
                 else jsonb_build_array(jsonb_build_array('e', encode(decode(md5(t::text || ':0'), 'hex') || decode(md5('0:' || t::text), 'hex'), 'hex'), '', 'root')) end,
            'message ' || t || ':' || r, $3, $4
       from generate_series(1, $5) t, lateral generate_series(0, case when t = 1 then $7::int else $6::int end) r`,
    [communityId, randomBytes(32), randomBytes(64), channelId, THREADS, REPLIES, LONG],
  );
  await pool.query(
    `insert into thread_metadata (community_id, event_created_at, event_id, channel_id, parent_event_id, parent_event_created_at,
                                  root_event_id, root_event_created_at, depth)
     select e.community_id, e.created_at, e.id, e.channel_id, r.id, r.created_at, r.id, r.created_at, 1
       from events e join events r on r.community_id = e.community_id and r.tags = '[]'::jsonb
        and r.id = decode(e.tags->0->>1, 'hex')
      where e.community_id = $1 and e.tags <> '[]'::jsonb`,
    [communityId],
  );
  // One reaction per reply of thread 1.
  await pool.query(
    `insert into events (community_id, id, pubkey, created_at, kind, tags, content, sig, channel_id)
     select e.community_id, decode(md5('react' || encode(e.id, 'hex')), 'hex') || decode(md5(encode(e.id, 'hex')), 'hex'), $2,
            e.created_at + interval '1 second', 7, jsonb_build_array(jsonb_build_array('e', encode(e.id, 'hex'))), '+', $3, e.channel_id
       from events e join thread_metadata t on t.community_id = e.community_id and t.event_id = e.id and t.event_created_at = e.created_at
      where e.community_id = $1 and t.root_event_id = decode(md5('1:0'), 'hex') || decode(md5('0:1'), 'hex')`,
    [communityId, randomBytes(32), randomBytes(64)],
  );
  // The rows above bypass the write path, so their references are filled the way migration 0016 backfills.
  await fillEventRefs(kysely, communityId);
  await pool.query('vacuum analyze events');
  await pool.query('analyze event_refs');
  await pool.query('analyze thread_metadata');
  const { rows } = await pool.query(`select distinct tableoid::regclass::text as name from events`);
  populated = new Set(['thread_metadata', ...rows.map((r) => r.name as string)]);
  rootId = Buffer.concat([Buffer.from(md5hex('1:0'), 'hex'), Buffer.from(md5hex('0:1'), 'hex')]).toString('hex');
}, 120_000);

afterAll(async () => {
  await kysely?.destroy();
  await db?.drop();
});

function md5hex(s: string): string {
  return createHash('md5').update(s).digest('hex');
}

describe('thread window SQL', () => {
  it('pages older along the keyset without gaps or repeats, through dense seconds', async () => {
    const seen: string[] = [];
    let cursor: WindowCursor | undefined;
    for (;;) {
      const { rows } = await repo.page(kysely, communityId, { channelId, rootId, depthLimit: 1, kinds: undefined, cursor, limit: 499, reader: READER });
      const page = rows.slice(0, 499);
      seen.push(...page.map((r) => r.id));
      for (let i = 1; i < page.length; i++) {
        const [x, y] = [page[i - 1], page[i]];
        expect(x.created_at > y.created_at || (x.created_at === y.created_at && x.id < y.id)).toBe(true);
      }
      if (rows.length <= 499) break;
      cursor = { createdAt: page[498].created_at, id: page[498].id };
    }
    expect(seen).toHaveLength(LONG);
    expect(new Set(seen).size).toBe(LONG);
  });

  it('walks the root thread index to the limit: no sequential scan, no full sort', async () => {
    captured = [];
    await repo.page(kysely, communityId, { channelId, rootId, depthLimit: 1, kinds: [9], cursor: undefined, limit: 20, reader: READER });
    const plan = await planOf(/from thread_metadata t/);
    const walk = plan.find((n) => n['Index Name'] === 'idx_thread_metadata_root_created');
    expect(walk).toBeDefined();
    // It stops near the limit (21 rows plus the rest of the last second), not at the thread's end.
    expect(walk!['Actual Rows'] * walk!['Actual Loops']).toBeLessThan(50);
    // `created_at DESC, id ASC` over a backward (created_at, id) walk: an incremental sort per second, never a full one.
    expect(seqScansOfRows(plan)).toEqual([]);
    expect(executed(plan, 'Sort')).toEqual([]);
  });

  it('finds every aux row of a batch through event_refs inside the fence: no GIN lookup, no sequential scan', async () => {
    const { rows: replies } = await repo.page(kysely, communityId, { channelId, rootId, depthLimit: 1, kinds: undefined, cursor: undefined, limit: 200, reader: READER });
    const targets = replies.slice(0, 200).map((r) => r.id);
    captured = [];
    const scope = { communityId, channels: [channelId], includeGlobal: true, reader: READER };
    const aux = await repo.auxPage(kysely, scope, targets, [5, 7, 9005, 40003], undefined, 1000);
    expect(aux.rows).toHaveLength(200);
    expect(new Set(aux.rows.map((r) => r.tags[0][1]))).toEqual(new Set(targets));
    const plan = await planOf(/event_refs/);
    expect(executed(plan, 'Index Scan').concat(executed(plan, 'Index Only Scan')).some((n) => n['Index Name'] === 'event_refs_pkey')).toBe(true);
    expect(executed(plan, 'Bitmap Index Scan').filter((n) => /tags/.test(n['Index Name'] ?? ''))).toEqual([]);
    expect(seqScansOfRows(plan)).toEqual([]);
  });
});
