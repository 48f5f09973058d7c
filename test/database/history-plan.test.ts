/**
 * Plan shape of the generic history read (EventReadRepository.query): a page of
 * `created_at DESC, id ASC` must come from an index walk that stops at LIMIT,
 * not from scanning and sorting every matching row. The SQL is captured from the
 * repository itself and EXPLAINed with its own parameters.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { CompiledQuery, Kysely, PostgresDialect } from 'kysely';
import { Pool } from 'pg';
import { NostrFilter } from '../../src/common/nostr.types.js';
import { DB } from '../../src/database/database.types.js';
import { EventReadRepository } from '../../src/events/event-read.repository.js';
import { communityWide } from '../../src/events/read-scope.js';
import { createTestDatabase, TestDatabase } from '../harness/test-database.js';

interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  Plans?: PlanNode[];
}

const ROWS = 20_000;
let db: TestDatabase;
let pool: Pool;
let kysely: Kysely<DB>;
let captured: CompiledQuery[] = [];
const communityId = randomUUID();
const author = randomBytes(32);

function flatten(node: PlanNode): PlanNode[] {
  return [node, ...(node.Plans ?? []).flatMap(flatten)];
}

beforeAll(async () => {
  db = await createTestDatabase();
  pool = new Pool({ connectionString: db.writerUrl, max: 2 });
  pool.on('error', () => undefined);
  kysely = new Kysely<DB>({ dialect: new PostgresDialect({ pool }), log: (e) => void (e.level === 'query' && captured.push(e.query)) });
  await pool.query(`insert into communities (id, host) values ($1, $2)`, [communityId, `plan-${communityId}.test`]);
  await pool.query(
    `insert into events (community_id, id, pubkey, created_at, kind, tags, content, sig)
     select $1, decode(md5(g::text) || md5((g + 1)::text), 'hex'),
            case when g % 50 = 0 then $2 else decode(md5((g * 7)::text) || md5((g * 11)::text), 'hex') end,
            now() - (g || ' seconds')::interval, case when g % 3 = 0 then 7 else 1 end, '[]', 'row ' || g, $3
       from generate_series(1, $4) g`,
    [communityId, author, randomBytes(64), ROWS],
  );
  await pool.query('analyze events');
}, 60_000);

afterAll(async () => {
  await kysely?.destroy();
  await db?.drop();
});

async function planOf(filter: NostrFilter): Promise<PlanNode[]> {
  captured = [];
  const rows = await new EventReadRepository().query(kysely, communityWide(communityId), filter, 20);
  expect(rows).toHaveLength(20);
  expect(rows.map((r) => r.created_at)).toEqual([...rows.map((r) => r.created_at)].sort((a, b) => b - a));
  const query = captured.find((q) => /from "?events"? e\b/i.test(q.sql))!;
  const { rows: explained } = await pool.query(`explain (format json) ${query.sql}`, [...query.parameters]);
  return flatten(explained[0]['QUERY PLAN'][0].Plan);
}

const filter = (f: Partial<NostrFilter>): NostrFilter => ({ tags: {}, extensions: {}, ...f });

describe('history read plan', () => {
  it.each([
    ['kinds', filter({ kinds: [1] })],
    ['authors', filter({ authors: [author.toString('hex')] })],
    ['no constraint', filter({})],
  ])('%s: walks an index to LIMIT instead of sorting every match', async (_name, f) => {
    const plan = await planOf(f);
    expect(plan.some((n) => /Index Scan/.test(n['Node Type']))).toBe(true);
    expect(plan.filter((n) => n['Node Type'] === 'Sort' || n['Node Type'] === 'Seq Scan').map((n) => n['Node Type'])).toEqual([]);
  });
});
