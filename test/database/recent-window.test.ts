/**
 * History pages read their recent window first (EventReadRepository.query, recentFloor): one
 * statement over the partitions of the last RECENT_WINDOW_SECS, and the same page over every
 * partition only when the window cannot fill it. The page must be exactly the one a plain
 * ordered query gives, wherever it ends: inside the window, on the rows at the floor itself, or
 * in partitions months and a year back.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { CompiledQuery, Kysely, PostgresDialect } from 'kysely';
import { Pool } from 'pg';
import { NostrFilter } from '../../src/nostr/nostr.types.js';
import { DB } from '../../packages/read-path/src/database/database.types.js';
import { ensureFuturePartitions } from '../../packages/read-path/src/database/partition-manager.js';
import { allStatementsGeneric, RECENT_WINDOW_SECS } from '../../src/events/event-read.queries.js';
import { EventReadRepository } from '../../src/events/event-read.repository.js';
import { GENERIC_PLAN } from '../../packages/read-path/src/database/statement-cache.js';
import { communityWide } from '../../src/channels/read-scope.js';
import { executedGenericPlan } from '../harness/explain.js';
import { createTestDatabase, TestDatabase } from '../harness/test-database.js';

let db: TestDatabase;
let pool: Pool;
let kysely: Kysely<DB>;
let captured: CompiledQuery[] = [];
const communityId = randomUUID();
const author = randomBytes(32).toString('hex');
/** The clock the repository is given: the floor is exactly NOW − RECENT_WINDOW_SECS. */
const NOW_MS = Date.now();
const FLOOR = Math.floor(NOW_MS / 1000) - RECENT_WINDOW_SECS;
const DAY = 86_400;

/**
 * Ages (seconds before the floor; negative = inside the window) of the seeded kind-1 rows, two
 * rows per age with ids in both orders of insertion. Ten ages inside the window, the floor itself
 * (in it), the second below it, then rows 10 days, 60 days and 400 days below it, which lie in
 * other monthly partitions. Every row has author `author`; every other age has the tag t=x.
 */
const AGES = [-9 * 3600, -8 * 3600, -7 * 3600, -6 * 3600, -5 * 3600, -4 * 3600, -3 * 3600, -2 * 3600, -3600, -60, 0, 1, 10 * DAY, 60 * DAY, 61 * DAY, 400 * DAY];

beforeAll(async () => {
  db = await createTestDatabase();
  pool = new Pool({ connectionString: db.writerUrl, max: 2 });
  pool.on('error', () => undefined);
  kysely = new Kysely<DB>({ dialect: new PostgresDialect({ pool }), log: (e) => void (e.level === 'query' && captured.push(e.query)) });
  // The monthly partitions a relay makes at start-up (the template has the migrations' only).
  await ensureFuturePartitions(kysely, 3);
  await pool.query(`insert into communities (id, host) values ($1, $2)`, [communityId, `window-${communityId}.test`]);
  await pool.query(
    `insert into events (community_id, id, pubkey, created_at, kind, tags, content, sig)
     select $1, decode(md5(a.i || '/' || r) || md5(r || '/' || a.i), 'hex'), decode($2, 'hex'), to_timestamp($3::bigint - a.age), 1,
            case when a.i % 2 = 0 then '[["t","x"]]'::jsonb else '[]'::jsonb end, 'age ' || a.age, $4
       from unnest($5::bigint[]) with ordinality as a(age, i) cross join generate_series(1, 2) r`,
    [communityId, author, FLOOR, randomBytes(64), AGES],
  );
  await pool.query('analyze events');
}, 60_000);

afterAll(async () => {
  await kysely?.destroy();
  await db?.drop();
});

const filter = (f: Partial<NostrFilter>): NostrFilter => ({ tags: {}, extensions: {}, kinds: [1], ...f });

/** The page as one plain ordered query over the whole table, independent of the repository. */
async function expected(f: NostrFilter, limit: number, offset = 0): Promise<string[]> {
  const { rows } = await pool.query<{ id: string }>(
    `select encode(id, 'hex') as id from events
      where community_id = $1 and kind = 1 and deleted_at is null
        and ($2::bigint is null or created_at >= to_timestamp($2)) and ($3::bigint is null or created_at <= to_timestamp($3))
        and ($4::text is null or tags @> jsonb_build_array(jsonb_build_array('t', $4::text)))
      order by created_at desc, id asc limit $5 offset $6`,
    [communityId, f.since ?? null, f.until ?? null, f.tags.t?.[0] ?? null, limit, offset],
  );
  return rows.map((r) => r.id);
}

/** The repository's page (at NOW_MS) and the statements it ran. */
async function read(f: NostrFilter, limit: number, offset = 0): Promise<{ ids: string[]; statements: CompiledQuery[] }> {
  captured = [];
  const page = await new EventReadRepository().query(kysely, communityWide(communityId), f, limit, offset, NOW_MS);
  return { ids: page.map((e) => e.id), statements: captured };
}

const floorParams = (q: CompiledQuery) => q.parameters.filter((p) => p === FLOOR);

describe('history page: the recent window first', () => {
  // 22 rows inside the window (11 ages, the floor's included), then 2 at the second below it.
  it.each([
    ['kinds', filter({}), 5, 1],
    ['kinds', filter({}), 22, 1],
    ['kinds', filter({}), 23, 2],
    ['kinds', filter({}), 100, 2],
    ['author', filter({ authors: [author] }), 10, 1],
    ['author', filter({ authors: [author] }), 30, 2],
    ['#t (event_tags)', filter({ tags: { t: ['x'] } }), 10, 1],
    ['#t (event_tags)', filter({ tags: { t: ['x'] } }), 13, 2],
    ['#t (event_tags)', filter({ tags: { t: ['x'] } }), 100, 2],
    ['#t and author (walk, then GIN)', filter({ authors: [author], tags: { t: ['x'] } }), 10, 1],
    ['#t and author (walk, then GIN)', filter({ authors: [author], tags: { t: ['x'] } }), 13, 2],
    ['#t and author (walk, then GIN)', filter({ authors: [author], tags: { t: ['x'] } }), 100, 2],
  ])('%s (%j), limit %i: the plain query\'s page, in %i statement(s)', async (_name, f, limit, statements) => {
    const page = await read(f, limit);
    const want = await expected(f, limit);
    expect(page.ids).toEqual(want);
    expect(page.statements).toHaveLength(statements);
    // The first statement is bounded below by the floor; a second one, over every partition, is not.
    expect(floorParams(page.statements[0]).length).toBeGreaterThan(0);
    if (statements === 2) expect(floorParams(page.statements[1])).toHaveLength(0);
  });

  it.each([
    ['kinds', filter({}), 0],
    ['#t', filter({ tags: { t: ['x'] } }), 0],
    ['#t and author', filter({ authors: [author], tags: { t: ['x'] } }), 0],
    ['#t with an offset', filter({ tags: { t: ['x'] } }), 5],
    ['two kinds', filter({ kinds: [1, 7] }), 0],
  ])('%s: every statement is marked GENERIC_PLAN exactly when allStatementsGeneric says so', async (_name, f, offset) => {
    const page = await read(f, 100, offset);
    expect(page.statements.length).toBeGreaterThan(0);
    const marked = page.statements.map((q) => q.sql.startsWith(GENERIC_PLAN));
    expect(marked).toEqual(page.statements.map(() => allStatementsGeneric(communityWide(communityId), f, offset)));
  });

  it('the rows at the floor are read in the window, the next second below it is not', async () => {
    const page = await read(filter({}), 22);
    const atFloor = await pool.query<{ id: string }>(`select encode(id, 'hex') as id from events where community_id = $1 and created_at = to_timestamp($2) order by id`, [communityId, FLOOR]);
    expect(page.ids.slice(20)).toEqual(atFloor.rows.map((r) => r.id));
  });

  it.each([
    ['since at the floor', filter({ since: FLOOR }), 50],
    ['since above the floor', filter({ since: FLOOR + 600 }), 50],
    ['until below the floor', filter({ until: FLOOR - 1 }), 50],
    ['until below the floor, tag', filter({ until: FLOOR - 1, tags: { t: ['x'] } }), 50],
    ['until below the floor, tag and author', filter({ until: FLOOR - 1, authors: [author], tags: { t: ['x'] } }), 50],
  ])('%s: one statement, with no floor of its own', async (_name, f, limit) => {
    const page = await read(f, limit);
    expect(page.ids).toEqual(await expected(f, limit));
    expect(page.ids.length).toBeGreaterThan(0);
    expect(page.statements).toHaveLength(1);
    // Only the filter's own `since` may have the floor's value.
    expect(floorParams(page.statements[0])).toHaveLength(f.since === FLOOR ? 1 : 0);
  });

  it('since below the floor and until above it: the window, then the whole range', async () => {
    const f = filter({ since: FLOOR - 61 * DAY, until: FLOOR + 3600 });
    const page = await read(f, 40);
    expect(page.ids).toEqual(await expected(f, 40));
    expect(page.statements).toHaveLength(2);
  });

  it('a page with an offset (the bridge catch-all) is one statement over every partition', async () => {
    const page = await read(filter({}), 10, 20);
    expect(page.ids).toEqual(await expected(filter({}), 10, 20));
    expect(page.statements).toHaveLength(1);
    expect(floorParams(page.statements[0])).toHaveLength(0);
  });

  it.each([
    ['kinds', filter({})],
    ['#t (event_tags)', filter({ tags: { t: ['x'] } })],
    ['#t and author (walk, then GIN)', filter({ authors: [author], tags: { t: ['x'] } })],
  ])('%s: the window statement sets up no partition older than the floor, the full one does', async (_name, f) => {
    const page = await read(f, 100);
    expect(page.statements).toHaveLength(2);
    const { rows } = await pool.query<{ partition: string }>(
      `select distinct tableoid::regclass::text as partition from events where community_id = $1 and created_at < to_timestamp($2) - interval '30 days'
        except select tableoid::regclass::text from events where created_at >= to_timestamp($2)`,
      [communityId, FLOOR],
    );
    const oldPartitions = rows.map((r) => r.partition);
    expect(oldPartitions.length).toBeGreaterThanOrEqual(2); // 60 and 400 days below the floor: a month's and events_p_past
    const scanned = async (q: CompiledQuery) => (await executedGenericPlan(pool, q.sql, q.parameters)).plan.map((n) => n['Relation Name']).filter((r) => r !== undefined);
    const windowed = await scanned(page.statements[0]);
    const full = new Set(await scanned(page.statements[1]));
    expect(oldPartitions.filter((p) => windowed.includes(p))).toEqual([]);
    expect(oldPartitions.filter((p) => full.has(p))).toEqual(oldPartitions);
    // The window's statement is one walk: one scan per partition (the tag page's GIN fallback
    // would add three more, each set up even when it never runs).
    expect(windowed.length).toBe(new Set(windowed).size);
  });
});
