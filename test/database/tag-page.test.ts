/**
 * Tag pages (EventReadRepository), in both of their forms:
 * - `event_tags`: a filter with a kind and a single-letter tag walks the tag index table
 *   (tagIndexWalk), about `limit` entries per value;
 * - `walk`: with authors, a bounded walk of the author index in page order first (tagWalk), the GIN
 *   index only for what the walk did not find (walkThenGin).
 * Whatever the tag's frequency, and wherever the walk's budget ends (here inside a run of rows
 * with the same created_at), the page must be exactly the one a plain ordered query gives, with
 * NIP-01's positional tag check applied.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { Kysely, PostgresDialect } from 'kysely';
import { Pool, PoolClient } from 'pg';
import { statementCachingClient } from '../../packages/read-path/src/database/statement-cache.js';
import { DB } from '../../packages/read-path/src/database/database.types.js';
import { HASHED_TAG_VALUES_FROM, walkBudget } from '../../src/events/event-read.queries.js';
import { EventReadRepository } from '../../src/events/event-read.repository.js';
import { communityWide } from '../../src/channels/read-scope.js';
import type { NostrFilter } from '../../src/nostr/nostr.types.js';
import { flattenPlan, type PlanNode } from '../harness/explain.js';
import { createTestDatabase, TestDatabase } from '../harness/test-database.js';

const ROWS = 6000;
let db: TestDatabase;
let pool: Pool;
let kysely: Kysely<DB>;
const communityId = randomUUID();
const pubkey = randomBytes(32);
const LONG = 'x'.repeat(300);
/** `n` values no row carries. */
const absent = (n: number) => Array.from({ length: n }, (_, i) => `absent-${i}`);

type Form = 'event_tags' | 'walk';
/** A kind-1 `#t` filter; the `walk` form names the one author of every row, which keeps tagIndexWalk out. */
function tagFilter(form: Form, values: string[], more: Partial<NostrFilter> = {}): NostrFilter {
  return { tags: { t: values }, extensions: {}, kinds: [1], ...(form === 'walk' ? { authors: [pubkey.toString('hex')] } : {}), ...more };
}

/**
 * Row g has rank g in page order: created_at falls by one second every three rows and the id
 * grows with g. Tags: `common` on every 4th row; `medium` on every 150th, plus rows 1000 and 1001,
 * which share their second with row 999 (the 1,000th row, where a limit-20 walk stops); the
 * reversed pair ["medium","t"] every 150th row from 75, which containment matches and the
 * positional check must not; `rare` on three old rows; `["l","third"]` on every 3rd row; a
 * 300-byte `t` value, too long for event_tags, on row 5000.
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
               union all select '["t","rare"]' where g in (4000, 4500, 5999)
               union all select '["l","third"]' where g % 3 = 0
               union all select jsonb_build_array('t', $5::text) where g = 5000) tags),
            'row ' || g, $3
       from generate_series(0, $4 - 1) g`,
    [communityId, pubkey, randomBytes(64), ROWS, LONG],
  );
  await pool.query('analyze events');
}, 60_000);

afterAll(async () => {
  await kysely?.destroy();
  await db?.drop();
});

/** The page as a plain ordered query with the positional checks, independent of the repository. */
async function expected(values: string[], limit: number, more: { since?: number; until?: number; beforeId?: string; third?: boolean } = {}): Promise<string[]> {
  const { rows } = await pool.query<{ id: string }>(
    `select encode(id, 'hex') as id from events
      where community_id = $1 and kind = 1 and deleted_at is null
        and exists (select 1 from jsonb_array_elements(tags) t where t->>0 = 't' and t->>1 = any($2::text[]))
        and ($4::bigint is null or created_at >= to_timestamp($4))
        and ($5::bigint is null or created_at < to_timestamp($5) or (created_at = to_timestamp($5) and ($6::text is null or id > decode($6, 'hex'))))
        and (not $7 or exists (select 1 from jsonb_array_elements(tags) t where t->>0 = 'l' and t->>1 = 'third'))
      order by created_at desc, id asc limit $3`,
    [communityId, values, limit, more.since ?? null, more.until ?? null, more.beforeId ?? null, more.third ?? false],
  );
  return rows.map((r) => r.id);
}

describe.each<Form>(['event_tags', 'walk'])('tag page, %s form', (form) => {
  const read = (values: string[], limit: number, more: Partial<NostrFilter> = {}) =>
    new EventReadRepository().query(kysely, communityWide(communityId), tagFilter(form, values, more), limit).then((page) => page.map((e) => e.id));

  it.each([
    ['common', 20],
    ['common', 300],
    ['medium', 20],
    ['medium', 5],
    ['medium', 8],
    ['rare', 20],
    ['absent', 20],
    ['long', 20],
  ])('#t %s, limit %i: the same page as the plain query', async (name, limit) => {
    // `long`: a value too long for event_tags (migration 0018), read through the GIN index.
    const value = name === 'long' ? LONG : name;
    const want = await expected([value], limit);
    expect(await read([value], limit)).toEqual(want);
    if (value === 'medium' && limit === 20) {
      // 7 matches inside the walk, the rest after it, rows 1000 and 1001 in the walk's last second among them.
      expect(want.slice(7, 9)).toEqual([1000, 1001].map((g) => g.toString(16).padStart(64, '0')));
    }
    if (value === LONG) expect(want).toEqual([(5000).toString(16).padStart(64, '0')]);
  });

  it('several values: an event that carries two of them is in the page once', async () => {
    // Every 300th row carries both `common` and `medium`.
    const want = await expected(['common', 'medium'], 100);
    expect(new Set(want).size).toBe(100);
    expect(await read(['medium', 'common'], 100)).toEqual(want);
    // A value too long for event_tags beside indexed ones: the page still holds its row.
    expect(await read(['rare', LONG], 20)).toEqual(await expected(['rare', LONG], 20));
  });

  it('a second tag is checked on every row', async () => {
    const page = await read(['common'], 30, { tags: { t: ['common'], l: ['third'] } });
    expect(page).toEqual(await expected(['common'], 30, { third: true }));
    expect(page).toHaveLength(30);
  });

  it('applies since, until and several values', async () => {
    const { rows: top } = await pool.query<{ t: string }>(`select extract(epoch from max(created_at))::bigint as t from events where community_id = $1`, [communityId]);
    // Rows 300 to about 5100: the walk starts below the newest rows and the window ends before `rare`'s last row.
    const until = Number(top[0].t) - 100;
    const since = Number(top[0].t) - 1700;
    const want = await expected(['rare', 'medium'], 20, { since, until });
    expect(want).toHaveLength(20);
    expect(await read(['rare', 'medium'], 20, { since, until })).toEqual(want);
  });

  it('many values (checked through a hash of them): the same page, and the reversed pair still does not match', async () => {
    const values = ['medium', 'rare', ...absent(HASHED_TAG_VALUES_FROM)];
    const want = await expected(values, 60);
    // 42 `medium` rows and 3 `rare` ones, row 4500 among both.
    expect(want).toHaveLength(44);
    expect(await read(values, 60)).toEqual(want);
    const page = await read(['common'], 30, { tags: { t: ['common'], l: ['third', ...absent(HASHED_TAG_VALUES_FROM)] } });
    expect(page).toEqual(await expected(['common'], 30, { third: true }));
  });

  it('resumes after a (created_at, id) cursor inside a second of three rows', async () => {
    // Rows 3000, 3001, 3002 share a second; the cursor is row 3000, so rows 3001 and 3002 come first.
    const { rows } = await pool.query<{ t: string }>(
      `select extract(epoch from created_at)::bigint as t from events where community_id = $1 and id = decode(lpad(to_hex(3000), 64, '0'), 'hex')`,
      [communityId],
    );
    const until = Number(rows[0].t);
    const beforeId = (3000).toString(16).padStart(64, '0');
    const values = ['common', 'rare', 'medium'];
    const want = await expected(values, 20, { until, beforeId });
    expect(want).toHaveLength(20);
    expect(await read(values, 20, { until, before_id: beforeId })).toEqual(want);
  });
});

/**
 * The executed plans of the statements of the repository's tag page, in order, through the
 * relay's own client class (auto_explain sends each as a notice).
 */
async function executedPlans(filter: NostrFilter, bounds: { until?: number; third?: boolean } = {}): Promise<PlanNode[][]> {
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
    const page = await new EventReadRepository().query(on, communityWide(communityId), filter, 20);
    expect(page.map((e) => e.id)).toEqual(await expected(filter.tags.t, 20, bounds));
  } finally {
    await on.destroy();
  }
  const plans = notices.map((m) => m.slice(m.indexOf('{'))).filter((m) => m.includes('"Plan"') && m.includes('events'));
  if (plans.length === 0) throw new Error(`auto_explain sent no plan: ${notices.join(' | ')}`);
  return plans.map((plan) => flattenPlan((JSON.parse(plan) as { Plan: PlanNode }).Plan));
}

/** Rows the plan's scans of indexes matching `index` returned, over all their loops. */
const indexRows = (plan: PlanNode[], index: RegExp) =>
  plan.filter((n) => index.test(n['Index Name'] ?? '')).reduce((sum, n) => sum + (n['Actual Rows'] ?? 0) * (n['Actual Loops'] ?? 0), 0);
/** Rows read from `events` partitions: here one primary-key look-up per index entry, pruned to one partition each. */
const eventRowsRead = (plan: PlanNode[]) =>
  plan.filter((n) => /^events_p/.test(n['Relation Name'] ?? '')).reduce((sum, n) => sum + (n['Actual Rows'] ?? 0) * (n['Actual Loops'] ?? 0), 0);
const ran = (plan: PlanNode[], index: RegExp) => plan.some((n) => index.test(n['Index Name'] ?? '') && (n['Actual Loops'] ?? 0) > 0);

describe('tag page plans, event_tags form', () => {
  it('a common tag: 20 index entries and 20 row look-ups, no other index', async () => {
    // One statement: the recent window's walk fills the page (the rows are minutes old).
    const plans = await executedPlans(tagFilter('event_tags', ['common']));
    expect(plans).toHaveLength(1);
    const [plan] = plans;
    expect(indexRows(plan, /^event_tags_walk$/)).toBe(20);
    expect(ran(plan, /tags_idx/)).toBe(false);
    expect(eventRowsRead(plan)).toBe(20);
  });

  it('an `until` half an hour back: the walk starts there', async () => {
    const { rows: top } = await pool.query<{ t: string }>(`select extract(epoch from max(created_at))::bigint as t from events where community_id = $1`, [communityId]);
    const until = Number(top[0].t) - 1800;
    const plans = await executedPlans(tagFilter('event_tags', ['common'], { until }), { until });
    expect(plans).toHaveLength(1);
    // Bounded on the index entry, not on the looked-up row: 20 entries, not the 1,350 newer ones first.
    expect(indexRows(plans[0], /^event_tags_walk$/)).toBe(20);
    expect(eventRowsRead(plans[0])).toBe(20);
  });

  it('a rare tag: its own three entries, in the window and then in full, never the community', async () => {
    const plans = await executedPlans(tagFilter('event_tags', ['rare']));
    expect(plans).toHaveLength(2);
    for (const plan of plans) {
      expect(indexRows(plan, /^event_tags_walk$/)).toBe(3);
      expect(ran(plan, /tags_idx/)).toBe(false);
      expect(eventRowsRead(plan)).toBe(3);
    }
  });
});

describe('tag page plans, walk form', () => {
  it('a common tag: the walk stops at the page, and neither the walk end nor the GIN index is read', async () => {
    // One statement: the recent window's walk fills the page (the rows are minutes old).
    const plans = await executedPlans(tagFilter('walk', ['common']));
    expect(plans).toHaveLength(1);
    const [plan] = plans;
    // Every 4th row matches: 77 rows for 20 matches (a second walk to the budget's end would add 1,000).
    expect(indexRows(plan, /pubkey_kind_created/)).toBeLessThan(100);
    expect(ran(plan, /tags_idx/)).toBe(false);
  });

  it('a rare tag: the walk gives up at its budget and the GIN index finds the rest', async () => {
    // The recent window's walk cannot fill the page, so the complete statement runs.
    const plans = await executedPlans(tagFilter('walk', ['rare']));
    expect(plans).toHaveLength(2);
    const plan = plans[1];
    expect(ran(plan, /tags_idx/)).toBe(true);
    // The walk, the look-up of its last row and one row per GIN candidate (3): never the community's 6,000 rows.
    expect(indexRows(plan, /pubkey_kind_created/)).toBeLessThanOrEqual(2 * walkBudget(20) + 3);
  });

  it('two tags of many values: the GIN index finds the candidates, and no row is tested against every value', async () => {
    // Row 4500 is the one `rare` row with `["l","third"]`. (On the abuse bench's data, asked for
    // both tags' probes at once, the generic plan scanned the community instead and tested every
    // probe on every row; this table's statistics keep the index either way.)
    const filter = tagFilter('walk', ['rare', ...absent(40)], { tags: { t: ['rare', ...absent(40)], l: ['third', ...absent(40)] } });
    const plans = await executedPlans(filter, { third: true });
    expect(plans).toHaveLength(2);
    const plan = plans[1];
    expect(ran(plan, /tags_idx/)).toBe(true);
    expect(eventRowsRead(plan)).toBeLessThanOrEqual(2 * walkBudget(20) + 3);
    // The probes are index conditions only: a walked or looked-up row gets the positional check
    // (the empty partitions' scans carry the probe as a filter and read nothing).
    const probedRows = plan.filter((n) => (n.Filter ?? '').includes('@>')).reduce((sum, n) => sum + (n['Actual Rows'] ?? 0) + (n['Rows Removed by Filter'] ?? 0), 0);
    expect(probedRows).toBe(0);
  });
});
