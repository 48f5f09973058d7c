/**
 * The schema the migrations build (database.md §1), checked against a real Postgres: migration
 * round trip, the §1.2 index set on `events` and every partition, the GIN plan for tag
 * containment, and the constraints the relay relies on.
 */
import { createHash, randomBytes } from 'node:crypto';

import { Kysely, PostgresDialect, RawBuilder, sql } from 'kysely';
import pg from 'pg';

import { migrations } from '../../packages/read-path/migrations/index.js';
import {
  REPLICA_FLOOR_LOCK_KEY,
  REPLICA_FLOOR_LOCK_KEY_TEXT,
} from '../../packages/read-path/src/database/constants.js';
import type { DB } from '../../packages/read-path/src/database/database.types.js';
import {
  MigrationFailedError,
  migrateDownAll,
  migrateDownOne,
  migrateToLatest,
} from '../../packages/read-path/src/database/migrator.js';
import { createTestDatabase, type TestDatabase } from '../harness/test-database.js';

const EVENTS_INDEXES: Record<string, RegExp> = {
  events_pkey: /UNIQUE INDEX events_pkey ON ONLY public\.events USING btree \(community_id, created_at, id\)$/,
  idx_events_community_id: /USING btree \(community_id, id, created_at DESC\)$/,
  idx_events_community_channel_created: /USING btree \(community_id, channel_id, created_at DESC, id\)$/,
  idx_events_community_pubkey_kind_created: /USING btree \(community_id, pubkey, kind, created_at DESC, id\)$/,
  idx_events_community_kind_created: /USING btree \(community_id, kind, created_at DESC, id\)$/,
  idx_events_community_deleted: /USING btree \(community_id, deleted_at\)$/,
  idx_events_parameterized:
    /USING btree \(community_id, kind, pubkey, d_tag, created_at DESC, id\) WHERE \(\(d_tag IS NOT NULL\) AND \(deleted_at IS NULL\)\)$/,
  idx_events_tags_gin: /USING gin \(tags jsonb_path_ops\)$/,
  idx_events_search_tsv: /USING gin \(search_tsv\)$/,
};

function connect(url: string): Kysely<DB> {
  const pool = new pg.Pool({ connectionString: url, max: 3 });
  pool.on('error', () => undefined);
  return new Kysely<DB>({ dialect: new PostgresDialect({ pool }) });
}

async function insertCommunity(db: Kysely<DB>, host: string): Promise<string> {
  const row = await db.insertInto('communities').values({ host }).returning('id').executeTakeFirstOrThrow();
  return row.id;
}

async function insertEvent(
  db: Kysely<DB>,
  communityId: string,
  overrides: { kind?: number; content?: string; tags?: string[][]; createdAt?: Date } = {},
): Promise<Buffer> {
  const id = randomBytes(32);
  await db
    .insertInto('events')
    .values({
      community_id: communityId,
      id,
      pubkey: randomBytes(32),
      created_at: overrides.createdAt ?? new Date(),
      kind: overrides.kind ?? 9,
      tags: JSON.stringify(overrides.tags ?? []),
      content: overrides.content ?? 'hello buzz world',
      sig: randomBytes(64),
    })
    .execute();
  return id;
}

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  Plans?: PlanNode[];
}

function md5(text: string): string {
  return createHash('md5').update(text).digest('hex');
}

function planNodes(node: PlanNode): PlanNode[] {
  return [node, ...(node.Plans ?? []).flatMap(planNodes)];
}

describe('schema', () => {
  let tdb: TestDatabase;
  let db: Kysely<DB>;
  let communityId: string;

  beforeAll(async () => {
    tdb = await createTestDatabase();
    db = connect(tdb.writerUrl);
    communityId = await insertCommunity(db, `schema-${randomBytes(4).toString('hex')}.example`);
  });

  afterAll(async () => {
    await db?.destroy();
    await tdb?.drop();
  });

  it('has every migration applied, in key order', async () => {
    const rows = await sql<{ name: string }>`SELECT name FROM kysely_migration ORDER BY name`.execute(db);
    expect(rows.rows.map((r) => r.name)).toEqual(Object.keys(migrations).sort());
    expect(Object.keys(migrations)).toEqual(Object.keys(migrations).sort());
    expect(await migrateToLatest(db)).toEqual([]);
  });

  it('partitions events and delivery_log by range (created_at) with past, monthly and future partitions', async () => {
    for (const table of ['events', 'delivery_log']) {
      const { rows } = await sql<{ strategy: string; key: string }>`
        SELECT p.partstrat AS strategy, pg_get_partkeydef(p.partrelid) AS key
          FROM pg_partitioned_table p WHERE p.partrelid = ${table}::regclass`.execute(db);
      expect(rows).toEqual([{ strategy: 'r', key: 'RANGE (created_at)' }]);
      const parts = await partitionsOf(db, table);
      const names = parts.map((p) => p.name);
      expect(names).toEqual(expect.arrayContaining([`${table}_p_past`, `${table}_p2026_01`, `${table}_p2026_06`, `${table}_p_future`]));
      expect(parts.find((p) => p.name === `${table}_p_past`)?.bound).toBe(
        "FOR VALUES FROM (MINVALUE) TO ('2026-01-01 00:00:00+00')",
      );
      expect(parts.find((p) => p.name === `${table}_p2026_03`)?.bound).toBe(
        "FOR VALUES FROM ('2026-03-01 00:00:00+00') TO ('2026-04-01 00:00:00+00')",
      );
      expect(parts.find((p) => p.name === `${table}_p_future`)?.bound).toMatch(/ TO \(MAXVALUE\)$/);
    }
  });

  it('has the §1.2 indexes on events, cloned onto every partition', async () => {
    const { rows } = await sql<{ indexname: string; indexdef: string }>`
      SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'public' AND tablename = 'events'`.execute(db);
    const defs = new Map(rows.map((r) => [r.indexname, r.indexdef]));
    expect([...defs.keys()].sort()).toEqual(Object.keys(EVENTS_INDEXES).sort());
    for (const [name, pattern] of Object.entries(EVENTS_INDEXES)) {
      expect(defs.get(name)).toMatch(pattern);
    }

    const partitionCount = (await partitionsOf(db, 'events')).length;
    const leaves = await sql<{ index: string; leaves: string }>`
      SELECT i.indexrelid::regclass::text AS index,
             (SELECT count(*) FROM pg_partition_tree(i.indexrelid) t WHERE t.isleaf) AS leaves
        FROM pg_index i WHERE i.indrelid = 'events'::regclass`.execute(db);
    for (const row of leaves.rows) {
      expect({ index: row.index, leaves: Number(row.leaves) }).toEqual({ index: row.index, leaves: partitionCount });
    }
  });

  async function explain(query: RawBuilder<unknown>, seqscan: boolean): Promise<PlanNode[]> {
    return db.transaction().execute(async (trx) => {
      await sql`SELECT set_config('enable_seqscan', ${seqscan ? 'on' : 'off'}, true)`.execute(trx);
      const { rows } = await sql<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>`EXPLAIN (FORMAT JSON) ${query}`.execute(trx);
      return planNodes(rows[0]['QUERY PLAN'][0].Plan);
    });
  }

  it('can serve a bare tag containment from every partition\'s GIN index', async () => {
    const nodes = await explain(sql`SELECT id FROM events WHERE tags @> '[["e","x"]]'`, false);
    const partitions = (await partitionsOf(db, 'events')).map((p) => p.name);
    const tagScans = nodes.filter((n) => n['Node Type'] === 'Bitmap Index Scan' && n['Index Name']?.endsWith('_tags_idx'));
    expect(tagScans.map((n) => n['Index Name']).sort()).toEqual(partitions.map((p) => `${p}_tags_idx`).sort());
    expect(nodes.filter((n) => n['Node Type'] === 'Seq Scan' || n['Node Type'] === 'Index Scan')).toEqual([]);
  });

  it('reads a populated partition through the GIN index for community-scoped e-tag reads', async () => {
    // 2,000 reactions in one community, each with its own e target: the community prefix alone is
    // unselective, the containment is selective. Default planner settings, fresh statistics.
    await sql`
      INSERT INTO events (community_id, id, pubkey, created_at, kind, tags, content, sig)
      SELECT ${communityId}, decode(md5('id' || g) || md5('id2' || g), 'hex'), decode(repeat('ab', 32), 'hex'),
             now(), 7, jsonb_build_array(jsonb_build_array('e', md5('t' || g) || md5('t2' || g))), '+',
             decode(repeat('00', 64), 'hex')
        FROM generate_series(1, 2000) g`.execute(db);
    await sql`ANALYZE events`.execute(db);
    const { rows } = await sql<{ partition: string }>`
      SELECT DISTINCT tableoid::regclass::text AS partition FROM events WHERE community_id = ${communityId} AND kind = 7`.execute(db);
    expect(rows).toHaveLength(1);
    const populated = rows[0].partition;

    const probes = [17, 1999].map((g) =>
      JSON.stringify([['e', md5(`t${g}`) + md5(`t2${g}`)]]),
    );
    const queries = [
      sql`SELECT id FROM events WHERE community_id = ${communityId} AND tags @> ${probes[0]}::jsonb`,
      // The seed-002 form: one bound jsonb[] of single-pair documents.
      sql`SELECT id FROM events WHERE community_id = ${communityId} AND tags @> ANY(${probes}::jsonb[])`,
    ];
    for (const [i, query] of queries.entries()) {
      expect((await query.execute(db)).rows).toHaveLength(i === 0 ? 1 : 2);
      const nodes = await explain(query, true);
      const heap = nodes.find((n) => n['Relation Name'] === populated);
      expect(heap?.['Node Type']).toBe('Bitmap Heap Scan');
      expect(planNodes(heap as PlanNode).map((n) => n['Index Name'])).toContain(`${populated}_tags_idx`);
    }
  });

  it('stores search_tsv for public kinds and NULL for private kinds 1059, 30300, 30622', async () => {
    const kinds = [9, 1059, 30300, 30622, 40002];
    const ids = new Map<number, Buffer>();
    for (const kind of kinds) ids.set(kind, await insertEvent(db, communityId, { kind, content: 'Launch Plan' }));
    const { rows } = await sql<{ kind: number; tsv: string | null }>`
      SELECT kind, search_tsv::text AS tsv FROM events
       WHERE community_id = ${communityId} AND id = ANY(${[...ids.values()]}::bytea[])`.execute(db);
    const byKind = Object.fromEntries(rows.map((r) => [r.kind, r.tsv]));
    expect(byKind).toEqual({
      9: "'launch':1 'plan':2",
      1059: null,
      30300: null,
      30622: null,
      40002: "'launch':1 'plan':2",
    });
    await expect(
      sql`UPDATE events SET search_tsv = NULL WHERE community_id = ${communityId}`.execute(db),
    ).rejects.toMatchObject({ code: '428C9' });
  });

  it('rejects malformed event rows', async () => {
    const base = {
      community_id: communityId,
      pubkey: randomBytes(32),
      created_at: new Date(),
      kind: 9,
      tags: '[]',
      content: '',
      sig: randomBytes(64),
    };
    await expect(db.insertInto('events').values({ ...base, id: randomBytes(16) }).execute()).rejects.toMatchObject({
      code: '23514',
    });
    await expect(
      db.insertInto('events').values({ ...base, id: randomBytes(32), tags: '{"e":1}' }).execute(),
    ).rejects.toMatchObject({ code: '23514' });
    await expect(
      db
        .insertInto('events')
        .values({ ...base, id: randomBytes(32), community_id: '00000000-0000-4000-8000-000000000000' })
        .execute(),
    ).rejects.toMatchObject({ code: '23503' });
  });

  it('lets no foreign key reference events', async () => {
    const { rows } = await sql<{ conname: string }>`
      SELECT conname FROM pg_constraint
       WHERE contype = 'f'
         AND confrelid IN (SELECT relid FROM pg_partition_tree('events'::regclass))`.execute(db);
    expect(rows).toEqual([]);
  });

  it('keeps replica_heartbeat to exactly one registered row', async () => {
    const rows = await db.selectFrom('replica_heartbeat').selectAll().execute();
    expect(rows).toEqual([{ id: 1, epoch: expect.stringMatching(/^[0-9a-f-]{36}$/), token: '0' }]);
    await expect(db.insertInto('replica_heartbeat').values({ id: 2 }).execute()).rejects.toMatchObject({
      code: '23514',
    });
    await expect(db.insertInto('replica_heartbeat').values({ id: 1 }).execute()).rejects.toMatchObject({
      code: '23505',
    });
    const bumped = await db
      .updateTable('replica_heartbeat')
      .set({ token: sql`token + 1` })
      .where('id', '=', 1)
      .returning(['token', 'epoch'])
      .executeTakeFirstOrThrow();
    expect(bumped).toEqual({ token: '1', epoch: rows[0].epoch });
    const registry = await db.selectFrom('_operator_global_tables').select('table_name').execute();
    expect(registry).toEqual([{ table_name: 'replica_heartbeat' }]);
  });

  it('stores hosts normalised and resolves aliases to their community', async () => {
    await expect(insertCommunity(db, 'Upper.Example')).rejects.toMatchObject({ code: '23514' });
    await expect(insertCommunity(db, 'trailing.example.')).rejects.toMatchObject({ code: '23514' });
    const host = `alias-${randomBytes(4).toString('hex')}.example`;
    await db.insertInto('community_host_aliases').values({ host, community_id: communityId }).execute();
    await expect(insertCommunity(db, (await communityHost(db, communityId)))).rejects.toMatchObject({
      code: '23505',
    });
    const alias = await db.selectFrom('community_host_aliases').select('community_id').where('host', '=', host).executeTakeFirst();
    expect(alias).toEqual({ community_id: communityId });
  });

  it('allows one active reaction per actor, target and emoji, and a new one after deletion', async () => {
    const reaction = () => ({
      community_id: communityId,
      target_event_id: Buffer.alloc(32, 7),
      actor_pubkey: 'a'.repeat(64),
      emoji: '+',
      reaction_event_id: randomBytes(32),
    });
    await db.insertInto('reactions').values(reaction()).execute();
    const duplicate = await db
      .insertInto('reactions')
      .values(reaction())
      .onConflict((oc) =>
        oc.columns(['community_id', 'target_event_id', 'actor_pubkey', 'emoji']).where('deleted_at', 'is', null).doNothing(),
      )
      .returning('reaction_event_id')
      .execute();
    expect(duplicate).toEqual([]);
    await db.updateTable('reactions').set({ deleted_at: new Date() }).where('community_id', '=', communityId).execute();
    await db.insertInto('reactions').values(reaction()).execute();
  });

  it('enforces roles, visibility and channel membership referential integrity', async () => {
    await expect(
      db.insertInto('relay_members').values({ community_id: communityId, pubkey: 'b'.repeat(64), role: 'root' as 'owner' }).execute(),
    ).rejects.toMatchObject({ code: '23514' });
    const channel = await db
      .insertInto('channels')
      .values({ community_id: communityId, name: 'general' })
      .returning(['id', 'visibility', 'channel_type'])
      .executeTakeFirstOrThrow();
    expect(channel).toMatchObject({ visibility: 'open', channel_type: 'stream' });
    await db
      .insertInto('channel_members')
      .values({ community_id: communityId, channel_id: channel.id, pubkey: 'c'.repeat(64) })
      .execute();
    await expect(
      db
        .insertInto('channel_members')
        .values({ community_id: communityId, channel_id: '00000000-0000-4000-8000-000000000000', pubkey: 'c'.repeat(64) })
        .execute(),
    ).rejects.toMatchObject({ code: '23503' });
  });

  it('uses the "buzzflor" advisory key as one signed bigint', async () => {
    expect(REPLICA_FLOOR_LOCK_KEY).toBe(BigInt(`0x${Buffer.from('buzzflor', 'ascii').toString('hex')}`));
    expect(REPLICA_FLOOR_LOCK_KEY_TEXT).toBe(REPLICA_FLOOR_LOCK_KEY.toString());
    const { rows } = await db.transaction().execute(async (trx) => {
      await sql`SELECT pg_advisory_xact_lock_shared(${REPLICA_FLOOR_LOCK_KEY}::bigint)`.execute(trx);
      return sql<{ classid: string; objid: string; mode: string }>`
        SELECT classid::text, objid::text, mode FROM pg_locks
         WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND objsubid = 1`.execute(trx);
    });
    // A bigint advisory key shows up split into its high and low 32-bit halves.
    expect(rows).toEqual([
      {
        classid: String(REPLICA_FLOOR_LOCK_KEY >> 32n),
        objid: String(REPLICA_FLOOR_LOCK_KEY & 0xffffffffn),
        mode: 'ShareLock',
      },
    ]);
  });
});

describe('migrations round trip', () => {
  let tdb: TestDatabase;
  let db: Kysely<DB>;

  beforeAll(async () => {
    tdb = await createTestDatabase();
    db = connect(tdb.writerUrl);
  });

  afterAll(async () => {
    await db?.destroy();
    await tdb?.drop();
  });

  it('migrates down to nothing and back up again', async () => {
    const names = Object.keys(migrations);

    expect(await migrateDownOne(db)).toEqual([names[names.length - 1]]);
    expect(await migrateToLatest(db)).toEqual([names[names.length - 1]]);

    expect(await migrateDownAll(db)).toEqual([...names].reverse());
    expect(await userRelations(db)).toEqual([]);
    const functions = await sql<{ proname: string }>`
      SELECT proname FROM pg_proc WHERE proname = 'events_created_at_floor_guard'`.execute(db);
    expect(functions.rows).toEqual([]);

    // One transaction for the whole run: a failure names the migration and applies nothing.
    await sql`CREATE TABLE communities (id int)`.execute(db);
    const failure = await migrateToLatest(db).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(MigrationFailedError);
    expect(failure).toMatchObject({ migrationName: '0002_communities', direction: 'Up' });
    expect((failure as Error).message).toMatch(/^migration up failed in 0002_communities: .*already exists \(SQLSTATE 42P07\)$/);
    expect(await userRelations(db)).toEqual(['communities']);
    await sql`DROP TABLE communities`.execute(db);

    expect(await migrateToLatest(db)).toEqual(names);
    expect(await userRelations(db)).toEqual(
      expect.arrayContaining(['communities', 'events', 'events_p_future', 'replica_heartbeat', 'delivery_log_p_past']),
    );
    const heartbeat = await db.selectFrom('replica_heartbeat').select('id').execute();
    expect(heartbeat).toEqual([{ id: 1 }]);
  });
});

async function partitionsOf(db: Kysely<DB>, table: string): Promise<Array<{ name: string; bound: string }>> {
  const { rows } = await sql<{ name: string; bound: string }>`
    SELECT c.relname AS name, pg_get_expr(c.relpartbound, c.oid) AS bound
      FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
     WHERE i.inhparent = ${table}::regclass
     ORDER BY c.relname`.execute(db);
  return rows;
}

async function communityHost(db: Kysely<DB>, id: string): Promise<string> {
  const row = await db.selectFrom('communities').select('host').where('id', '=', id).executeTakeFirstOrThrow();
  return row.host;
}

/** Tables, views and sequences in public, except Kysely's own bookkeeping. */
async function userRelations(db: Kysely<DB>): Promise<string[]> {
  const { rows } = await sql<{ relname: string }>`
    SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p', 'v', 'S')
       AND c.relname NOT LIKE 'kysely_migration%'
     ORDER BY 1`.execute(db);
  return rows.map((r) => r.relname);
}
