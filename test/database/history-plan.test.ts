/**
 * Plan shape of the generic history read (EventReadRepository.query): a page of
 * `created_at DESC, id ASC` must come from an index walk that stops at LIMIT,
 * not from scanning and sorting every matching row. The SQL is captured from the
 * repository itself and planned with its own parameters twice: once as the custom plan of a
 * one-off statement, and once as the generic plan that the relay's prepared statements settle on
 * after five calls (database/statement-cache.ts), read back through auto_explain.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { CompiledQuery, Kysely, PostgresDialect } from 'kysely';
import { Pool } from 'pg';
import { NostrFilter } from '../../src/nostr/nostr.types.js';
import { DB } from '../../packages/read-path/src/database/database.types.js';
import { EventReadRepository } from '../../src/events/event-read.repository.js';
import { communityWide, ReadScope } from '../../src/channels/read-scope.js';
import { executedGenericPlan, flattenPlan, PlanNode } from '../harness/explain.js';
import { createTestDatabase, TestDatabase } from '../harness/test-database.js';


const ROWS = 20_000;
let db: TestDatabase;
let pool: Pool;
let kysely: Kysely<DB>;
let captured: CompiledQuery[] = [];
const communityId = randomUUID();
const author = randomBytes(32);
/** Two busy channels share most rows; the quiet one has one row in a hundred. */
const busyChannels = [randomUUID(), randomUUID()];
const quietChannel = randomUUID();


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
  await pool.query(
    `insert into events (community_id, id, pubkey, created_at, kind, tags, content, sig, channel_id)
     select $1, decode(md5('chan' || g) || md5('nel' || g), 'hex'), $2, now() - (g || ' seconds')::interval, 9,
            jsonb_build_array(jsonb_build_array('h', c::text)), 'message ' || g, $3, c
       from generate_series(1, $4) g
      cross join lateral (select case when g % 100 = 0 then $5::uuid else ($6::uuid[])[1 + g % 2] end as c) ch`,
    [communityId, author, randomBytes(64), ROWS, quietChannel, busyChannels],
  );
  await pool.query('analyze events');
}, 60_000);

afterAll(async () => {
  await kysely?.destroy();
  await db?.drop();
});

/** The repository's page for `filter` (checked for size and order), and the statement it ran. */
async function pageStatement(filter: NostrFilter, scope: ReadScope): Promise<CompiledQuery> {
  captured = [];
  const rows = await new EventReadRepository().query(kysely, scope, filter, 20);
  expect(rows).toHaveLength(20);
  expect(rows.map((r) => r.created_at)).toEqual([...rows.map((r) => r.created_at)].sort((a, b) => b - a));
  return captured.find((q) => /from "?events"? e\b/i.test(q.sql))!;
}

async function planOf(filter: NostrFilter, scope: ReadScope = communityWide(communityId)): Promise<PlanNode[]> {
  const query = await pageStatement(filter, scope);
  const { rows: explained } = await pool.query(`explain (format json) ${query.sql}`, [...query.parameters]);
  return flattenPlan(explained[0]['QUERY PLAN'][0].Plan);
}

/**
 * The generic plan of the statement, run as a named prepared statement the way the relay runs it,
 * with its execution counts. auto_explain sends the plan to the client as a notice.
 */
async function genericPlanOf(filter: NostrFilter, scope: ReadScope): Promise<PlanNode[]> {
  const query = await pageStatement(filter, scope);
  const { rows, plan } = await executedGenericPlan(pool, query.sql, query.parameters);
  expect(rows).toHaveLength(20);
  return plan;
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

  it("one pinned channel: the generic plan walks the channel index, not the community's kind index", async () => {
    // The REQ `{"kinds":[9],"#h":[channel]}`: its `#h` is the scope's condition on the channel column.
    const plan = await genericPlanOf(filter({ kinds: [9], tags: { h: [quietChannel] } }), { communityId, channels: [quietChannel], includeGlobal: false });
    const scans = plan.filter((n) => (n['Actual Rows'] ?? 0) > 0 && /Index Scan/.test(n['Node Type']));
    expect(scans.map((n) => n['Index Name'])).toEqual([expect.stringMatching(/channel_id_created_at/)]);
    // 20 rows read for a page of 20; over the kind index it was about 2,000 filtered away.
    expect(scans[0]['Rows Removed by Filter'] ?? 0).toBe(0);
    expect(plan.filter((n) => n['Node Type'] === 'Sort' || n['Node Type'] === 'Seq Scan')).toEqual([]);
  });

  it('`#h` is the channel a row is stored in: a reaction placed in the channel without an h tag of its own is returned', async () => {
    // A reaction takes its target's channel at ingest and may carry no `h` tag of its own
    // (nostr-tools nip25); a channel's `#h` reads find it (issue 29).
    const channel = randomUUID();
    await pool.query(
      `insert into events (community_id, id, pubkey, created_at, kind, tags, content, sig, channel_id)
       select $1, decode(md5('h' || g || $2) || md5('t' || g), 'hex'), $3, now() - (g || ' seconds')::interval, 7,
              case when g = 2 then '[["e","00"]]'::jsonb else jsonb_build_array(jsonb_build_array('h', $2::text)) end, '+', $4, $2::uuid
         from generate_series(1, 3) g`,
      [communityId, channel, author, randomBytes(64)],
    );
    const scope: ReadScope = { communityId, channels: [channel], includeGlobal: false };
    const repo = new EventReadRepository();
    expect(await repo.query(kysely, scope, filter({ kinds: [7] }), 20)).toHaveLength(3);
    const tagged = await repo.query(kysely, scope, filter({ kinds: [7], tags: { h: [channel] } }), 20);
    expect(tagged.map((e) => e.tags)).toEqual([[['h', channel]], [['e', '00']], [['h', channel]]]);
    // Two channels in scope, a filter of one: the other channel's rows stay out.
    const other = randomUUID();
    const both: ReadScope = { communityId, channels: [channel, other], includeGlobal: false };
    expect(await repo.query(kysely, both, filter({ kinds: [7], tags: { h: [other] } }), 20)).toEqual([]);
    expect(await repo.query(kysely, both, filter({ kinds: [7], tags: { h: [channel.toUpperCase()] } }), 20)).toHaveLength(3);
  });
});
