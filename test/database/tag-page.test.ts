/**
 * Tag pages (EventReadRepository: tagWalk, walkThenGin): a bounded walk in page order first, the GIN
 * index only for what the walk did not find. Whatever the tag's frequency, and wherever the
 * walk's budget ends (here inside a run of rows with the same created_at), the page must be
 * exactly the one a plain ordered query gives, with NIP-01's positional tag check applied.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { Kysely, PostgresDialect } from 'kysely';
import { Pool, PoolClient } from 'pg';
import { statementCachingClient } from '../../src/database/statement-cache.js';
import { DB } from '../../src/database/database.types.js';
import { EventReadRepository, walkBudget } from '../../src/events/event-read.repository.js';
import { communityWide } from '../../src/events/read-scope.js';
import { flattenPlan, type PlanNode } from '../harness/explain.js';
import { createTestDatabase, TestDatabase } from '../harness/test-database.js';

const ROWS = 6000;
let db: TestDatabase;
let pool: Pool;
let kysely: Kysely<DB>;
const communityId = randomUUID();

/**
 * Row g has rank g in page order: created_at falls by one second every three rows and the id
 * grows with g. Tags: `common` on every 4th row; `medium` on every 150th, plus rows 1000 and 1001,
 * which share their second with row 999 (the 1,000th row, where a limit-20 walk stops); the
 * reversed pair ["medium","t"] every 150th row from 75, which containment matches and the
 * positional check must not; `rare` on three old rows.
 */
beforeAll(async () => {
  expect(walkBudget(20)).toBe(1000);
  db = await createTestDatabase();
  pool = new Pool({ connectionString: db.writerUrl, max: 2 });
  pool.on('error', () => undefined);
  kysely = new Kysely<DB>({ dialect: new PostgresDialect({ pool }) });
  await pool.query(`insert into communities (id, host) values ($1, $2)`, [communityId, `tags-${communityId}.test`]);
  await pool.query(
    `insert into events (community_id, id, pubkey, created_at, kind, tags, content, sig)
     select $1, decode(lpad(to_hex(g), 64, '0'), 'hex'), $2, date_trunc('second', now()) - ((g / 3) || ' seconds')::interval, 1,
            (select coalesce(jsonb_agg(t), '[]'::jsonb) from (
               select '["t","common"]'::jsonb as t where g % 4 = 0
               union all select '["t","medium"]' where g % 150 = 0 or g in (1000, 1001)
               union all select '["medium","t"]' where g % 150 = 75
               union all select '["t","rare"]' where g in (4000, 4500, 5999)) tags),
            'row ' || g, $3
       from generate_series(0, $4 - 1) g`,
    [communityId, randomBytes(32), randomBytes(64), ROWS],
  );
  await pool.query('analyze events');
}, 60_000);

afterAll(async () => {
  await kysely?.destroy();
  await db?.drop();
});

/** The page as a plain ordered query with the positional check, independent of the repository. */
async function expected(value: string, limit: number): Promise<string[]> {
  const { rows } = await pool.query<{ id: string }>(
    `select encode(id, 'hex') as id from events
      where community_id = $1 and kind = 1 and deleted_at is null
        and exists (select 1 from jsonb_array_elements(tags) t where t->>0 = 't' and t->>1 = $2)
      order by created_at desc, id asc limit $3`,
    [communityId, value, limit],
  );
  return rows.map((r) => r.id);
}

describe('tag page: bounded walk, then the GIN index', () => {
  it.each([
    ['common', 20],
    ['common', 300],
    ['medium', 20],
    ['medium', 5],
    ['medium', 8],
    ['rare', 20],
    ['absent', 20],
  ])('#t %s, limit %i: the same page as the plain query', async (value, limit) => {
    const page = await new EventReadRepository().query(kysely, communityWide(communityId), { tags: { t: [value] }, extensions: {}, kinds: [1] }, limit);
    const want = await expected(value, limit);
    expect(page.map((e) => e.id)).toEqual(want);
    if (value === 'medium' && limit === 20) {
      // 7 matches inside the walk, the rest after it, rows 1000 and 1001 in the walk's last second among them.
      expect(want.slice(7, 9)).toEqual([1000, 1001].map((g) => g.toString(16).padStart(64, '0')));
    }
  });

  it('applies since, until and several values in both parts', async () => {
    const { rows: top } = await pool.query<{ t: string }>(`select extract(epoch from max(created_at))::bigint as t from events where community_id = $1`, [communityId]);
    // Rows 300 to about 5100: the walk starts below the newest rows and the window ends before `rare`'s last row.
    const until = Number(top[0].t) - 100;
    const since = Number(top[0].t) - 1700;
    const page = await new EventReadRepository().query(kysely, communityWide(communityId), { tags: { t: ['rare', 'medium'] }, extensions: {}, kinds: [1], since, until }, 20);
    const { rows } = await pool.query<{ id: string }>(
      `select encode(id, 'hex') as id from events
        where community_id = $1 and kind = 1 and created_at between to_timestamp($3) and to_timestamp($4)
          and exists (select 1 from jsonb_array_elements(tags) t where t->>0 = 't' and t->>1 = any($2::text[]))
        order by created_at desc, id asc limit 20`,
      [communityId, ['rare', 'medium'], since, until],
    );
    expect(rows.length).toBe(20);
    expect(page.map((e) => e.id)).toEqual(rows.map((r) => r.id));
  });

  /**
   * The executed plans of the statements of the repository's tag page, in order, through the
   * relay's own client class (auto_explain sends each as a notice).
   */
  async function executedPlans(value: string): Promise<PlanNode[][]> {
    const explained = new Pool({ connectionString: db.writerUrl, max: 1, Client: statementCachingClient(10) });
    explained.on('error', () => undefined);
    const notices: string[] = [];
    const client: PoolClient = await explained.connect();
    client.on('notice', (m: { message?: string }) => void (m.message && notices.push(m.message)));
    for (const s of [`load 'auto_explain'`, 'set auto_explain.log_min_duration = 0', 'set auto_explain.log_analyze = on', 'set auto_explain.log_format = json', 'set auto_explain.log_level = notice']) {
      await client.query(s);
    }
    client.release();
    const on = new Kysely<DB>({ dialect: new PostgresDialect({ pool: explained }) });
    try {
      const page = await new EventReadRepository().query(on, communityWide(communityId), { tags: { t: [value] }, extensions: {}, kinds: [1] }, 20);
      expect(page.map((e) => e.id)).toEqual(await expected(value, 20));
    } finally {
      await on.destroy();
    }
    const plans = notices.map((m) => m.slice(m.indexOf('{'))).filter((m) => m.includes('"Plan"') && m.includes('events'));
    if (plans.length === 0) throw new Error(`auto_explain sent no plan: ${notices.join(' | ')}`);
    return plans.map((plan) => flattenPlan((JSON.parse(plan) as { Plan: PlanNode }).Plan));
  }

  const indexRows = (plan: PlanNode[], index: RegExp) =>
    plan.filter((n) => index.test(n['Index Name'] ?? '')).reduce((sum, n) => sum + (n['Actual Rows'] ?? 0) * (n['Actual Loops'] ?? 0), 0);

  it('a common tag: the walk stops at the page, and neither the walk end nor the GIN index is read', async () => {
    // One statement: the recent window's walk fills the page (the rows are minutes old).
    const plans = await executedPlans('common');
    expect(plans).toHaveLength(1);
    const [plan] = plans;
    // Every 4th row matches: 77 rows for 20 matches (a second walk to the budget's end would add 1,000).
    expect(indexRows(plan, /kind_created_at/)).toBeLessThan(100);
    expect(plan.filter((n) => /tags_idx/.test(n['Index Name'] ?? '') && (n['Actual Loops'] ?? 0) > 0)).toEqual([]);
  });

  it('a rare tag: the walk gives up at its budget and the GIN index finds the rest', async () => {
    // The recent window's walk cannot fill the page, so the complete statement runs.
    const plans = await executedPlans('rare');
    expect(plans).toHaveLength(2);
    const plan = plans[1];
    expect(plan.some((n) => /tags_idx/.test(n['Index Name'] ?? '') && (n['Actual Loops'] ?? 0) > 0)).toBe(true);
    // The walk, the look-up of its last row and one row per GIN candidate (3): never the community's 6,000 rows.
    expect(indexRows(plan, /kind_created_at/)).toBeLessThanOrEqual(2 * walkBudget(20) + 3);
  });
});
