/**
 * Prepared statements on the writer and reader pools (database/statement-cache.ts): which
 * statements are named, the per-connection cap, that the history read settles on a generic
 * plan (no planning per call) on the partitioned `events` table, on the writer and the replica,
 * and that GENERIC_PLAN statements get it from the first call while the rest keep the session's mode.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { Kysely, PostgresDialect, sql } from 'kysely';
import { Pool, PoolClient } from 'pg';
import { DB } from '../../packages/read-path/src/database/database.types.js';
import { GENERIC_PLAN, statementCachingClient } from '../../packages/read-path/src/database/statement-cache.js';
import { RECENT_WINDOW_SECS } from '../../src/events/event-read.queries.js';
import { EventReadRepository } from '../../src/events/event-read.repository.js';
import { communityWide, ReadScope } from '../../src/channels/read-scope.js';
import { createTestDatabase, TestDatabase } from '../harness/test-database.js';

let db: TestDatabase;
const communityId = randomUUID();
const author = randomBytes(32);
/** 30 rows among the community's 30,000: the custom plan of a read pinned to it looks very cheap. */
const quietChannel = randomUUID();
const pools: Pool[] = [];

function pool(url: string, capacity: number): Pool {
  const p = new Pool({ connectionString: url, max: 1, Client: statementCachingClient(capacity) });
  p.on('error', () => undefined);
  pools.push(p);
  return p;
}

async function prepared(client: PoolClient): Promise<Array<{ name: string; generic_plans: number; custom_plans: number }>> {
  const { rows } = await client.query(`select name, generic_plans::int, custom_plans::int from pg_prepared_statements order by name`);
  return rows;
}

beforeAll(async () => {
  db = await createTestDatabase();
  const setup = new Pool({ connectionString: db.writerUrl, max: 1 });
  await setup.query(`insert into communities (id, host) values ($1, $2)`, [communityId, `stmt-${communityId}.test`]);
  await setup.query(
    `insert into events (community_id, id, pubkey, created_at, kind, tags, content, sig)
     select $1, decode(md5(g::text) || md5((g + 1)::text), 'hex'),
            case when g % 10 = 0 then $2 else decode(md5((g % 7)::text) || md5((g % 7)::text), 'hex') end,
            now() - (g || ' minutes')::interval, case when g % 3 = 0 then 7 else 1 end, '[]', 'row ' || g, $3
       from generate_series(1, 30000) g`,
    [communityId, author, randomBytes(64)],
  );
  await setup.query(
    `insert into events (community_id, id, pubkey, created_at, kind, tags, content, sig, channel_id)
     select $1, decode(md5('q' || g) || md5('c' || g), 'hex'), $2, now() - (g || ' seconds')::interval, 9,
            jsonb_build_array(jsonb_build_array('h', $3::text)), 'message ' || g, $4, $3::uuid
       from generate_series(1, 30) g`,
    [communityId, author, quietChannel, randomBytes(64)],
  );
  await setup.query('analyze events');
  await setup.end();
  await db.waitForReplica();
}, 60_000);

afterAll(async () => {
  await Promise.all(pools.splice(0).map((p) => p.end()));
  await db?.drop();
});

describe('statement cache', () => {
  it('names parameterised statements once per connection and leaves the rest unnamed', async () => {
    const client = await pool(db.writerUrl, 10).connect();
    try {
      await client.query('select 1');
      await client.query('begin');
      await client.query('select $1::int + 1 as n', [1]);
      await client.query('commit');
      const second = await client.query('select $1::int + 1 as n', [41]);
      expect(second.rows).toEqual([{ n: 42 }]);
      const names = await prepared(client);
      expect(names).toHaveLength(1);
      expect(names[0].name).toMatch(/^buzz_/);
    } finally {
      client.release();
    }
  });

  it('stops naming new statements at the per-connection capacity', async () => {
    const client = await pool(db.writerUrl, 2).connect();
    try {
      for (const k of [1, 2, 3, 4]) {
        const { rows } = await client.query(`select $1::int * ${k} as n`, [2]);
        expect(rows).toEqual([{ n: 2 * k }]);
      }
      expect(await prepared(client)).toHaveLength(2);
    } finally {
      client.release();
    }
  });

  it('prepares nothing at capacity 0', async () => {
    const client = await pool(db.writerUrl, 0).connect();
    try {
      await client.query('select $1::int as n', [1]);
      expect(await prepared(client)).toEqual([]);
    } finally {
      client.release();
    }
  });

  it.each([
    ['writer', () => db.writerUrl],
    ['replica', () => db.readerUrl],
  ])('the history read runs on a generic plan after warm-up (%s)', async (_role, url) => {
    const p = pool(url(), 10);
    const kysely = new Kysely<DB>({ dialect: new PostgresDialect({ pool: p }) });
    const repo = new EventReadRepository();
    const scope = communityWide(communityId);
    for (let i = 0; i < 8; i++) {
      const rows = await repo.query(kysely, scope, { tags: {}, extensions: {}, kinds: [1], authors: [author.toString('hex')] }, 20);
      expect(rows).toHaveLength(20);
      expect(rows.every((r) => r.pubkey === author.toString('hex') && r.kind === 1)).toBe(true);
    }
    const client = await p.connect();
    try {
      const stats = (await prepared(client)).filter((s) => s.generic_plans + s.custom_plans > 0);
      expect(stats).toHaveLength(1);
      expect(stats[0].generic_plans).toBeGreaterThanOrEqual(2);
    } finally {
      client.release();
    }
  });

  describe('GENERIC_PLAN statements', () => {
    const scope: ReadScope = { communityId, channels: [quietChannel], includeGlobal: false };
    const channelPage = { tags: { h: [quietChannel] }, extensions: {}, kinds: [9] };
    type Stat = { statement: string; generic_plans: number; custom_plans: number };

    async function plansOf(client: PoolClient): Promise<Stat[]> {
      const { rows } = await client.query<Stat>(`select statement, generic_plans::int, custom_plans::int from pg_prepared_statements where statement like '%from events e%'`);
      return rows;
    }

    async function readChannel(kysely: Kysely<DB>): Promise<void> {
      const rows = await new EventReadRepository().query(kysely, scope, { ...channelPage }, 20);
      expect(rows).toHaveLength(20);
    }

    it('run generic from the first call, while the same text unmarked keeps being planned per call', async () => {
      const p = pool(db.writerUrl, 10);
      const kysely = new Kysely<DB>({ dialect: new PostgresDialect({ pool: p }) });
      for (let i = 0; i < 8; i++) await readChannel(kysely);
      const client = await p.connect();
      try {
        const [marked] = await plansOf(client);
        expect(marked.statement.startsWith(GENERIC_PLAN)).toBe(true);
        expect(marked).toMatchObject({ generic_plans: 8, custom_plans: 0 });
        // The same statement without the mark, on the same connection: the client puts the
        // session's own mode back, and `auto` plans its first calls for their values (the reason for the mark).
        const text = marked.statement.slice(GENERIC_PLAN.length);
        // The page is read in its recent window (the channel's rows are minutes old), whose floor follows the kind.
        // `#h` of the one channel in scope is the scope's own condition on the channel column.
        const params = [communityId, quietChannel, 9, Math.floor(Date.now() / 1000) - RECENT_WINDOW_SECS];
        for (let i = 0; i < 8; i++) expect((await client.query(text, params)).rows).toHaveLength(20);
        expect((await client.query('show plan_cache_mode')).rows).toEqual([{ plan_cache_mode: 'auto' }]);
        // `auto` plans the first five calls for their values whatever the costs (Postgres's rule);
        // only then may it settle on the generic plan. The mark saves those five on every connection.
        const unmarked = (await plansOf(client)).find((s) => s.statement === text)!;
        expect(unmarked.custom_plans).toBeGreaterThanOrEqual(5);
        expect(unmarked.custom_plans + unmarked.generic_plans).toBe(8);
      } finally {
        client.release();
      }
    });

    it('leave the mode alone inside a transaction block, where a rollback would undo a switch', async () => {
      const p = pool(db.writerUrl, 10);
      const kysely = new Kysely<DB>({ dialect: new PostgresDialect({ pool: p }) });
      await kysely
        .transaction()
        .execute(async (tx) => {
          await readChannel(tx);
          const { rows } = await sql<{ plan_cache_mode: string }>`show plan_cache_mode`.execute(tx);
          expect(rows).toEqual([{ plan_cache_mode: 'auto' }]);
          throw new Error('abandon');
        })
        .catch((err: Error) => expect(err.message).toBe('abandon'));
      for (let i = 0; i < 3; i++) await readChannel(kysely);
      const client = await p.connect();
      try {
        expect((await client.query('show plan_cache_mode')).rows).toEqual([{ plan_cache_mode: 'force_generic_plan' }]);
        // One custom plan inside the transaction (the server's `auto`), then generic ones.
        expect((await plansOf(client))[0]).toMatchObject({ generic_plans: 3, custom_plans: 1 });
      } finally {
        client.release();
      }
    });
  });
});
