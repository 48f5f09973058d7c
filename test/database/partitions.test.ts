/**
 * Partition manager (database.md §1.1, tests of §8.5): input validation, idempotence, overlap
 * treated as success, and this project's split of an empty catch-all. The cases share one
 * database and run in order; each derives its dates from the catch-all bounds it finds, so they
 * hold whether or not the template already ran the manager.
 */
import { randomBytes } from 'node:crypto';

import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';

import type { DB } from '../../packages/read-path/src/database/database.types.js';
import {
  assertPartitionDate,
  assertPartitionedTable,
  assertPartitionSuffix,
  ensureFuturePartitions,
  ensurePartition,
  monthlyPartition,
  PARTITIONED_TABLES,
} from '../../packages/read-path/src/database/partition-manager.js';
import { createTestDatabase, type TestDatabase } from '../harness/test-database.js';

function connect(url: string): Kysely<DB> {
  const pool = new pg.Pool({ connectionString: url, max: 3 });
  pool.on('error', () => undefined);
  return new Kysely<DB>({ dialect: new PostgresDialect({ pool }) });
}

function monthStart(date: Date, addMonths = 0): Date {
  return new Date(Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + addMonths, 1));
}

/** `<table>_pYYYY_MM` for every month in [first, last]. */
function monthNames(table: string, first: Date, last: Date): string[] {
  const names: string[] = [];
  for (let m = monthStart(first); m <= last; m = monthStart(m, 1)) {
    names.push(monthlyPartition(table, m.getUTCFullYear(), m.getUTCMonth() + 1).name);
  }
  return names;
}

function midMonth(month: Date): Date {
  return new Date(month.getTime() + 14 * 86_400_000);
}

describe('partition manager: input validation', () => {
  it('accepts only allowlisted tables', () => {
    expect(() => assertPartitionedTable('events')).not.toThrow();
    expect(() => assertPartitionedTable('delivery_log')).not.toThrow();
    for (const table of ['communities', 'Events', 'events; DROP TABLE events', '']) {
      expect(() => assertPartitionedTable(table)).toThrow(/allowlist/);
    }
    expect(PARTITIONED_TABLES).toEqual(['events', 'delivery_log']);
  });

  it('accepts suffixes of digits and underscores only', () => {
    expect(() => assertPartitionSuffix('2026_07')).not.toThrow();
    for (const suffix of ['', '2026-07', '2026_07 ', '07"; DROP TABLE events; --', 'future']) {
      expect(() => assertPartitionSuffix(suffix)).toThrow(/suffix/);
    }
  });

  it('accepts real YYYY-MM-DD dates only', () => {
    expect(() => assertPartitionDate('2026-07-01')).not.toThrow();
    expect(() => assertPartitionDate('2028-02-29')).not.toThrow();
    for (const date of ['2026-7-01', '2026-02-30', '26-07-01', '2026-07-01 00:00', "2026-07-01'); --", '']) {
      expect(() => assertPartitionDate(date)).toThrow(/date/);
    }
  });

  it('names monthly partitions <table>_pYYYY_MM with UTC month bounds', () => {
    expect(monthlyPartition('events', 2026, 12)).toEqual({
      table: 'events',
      suffix: '2026_12',
      name: 'events_p2026_12',
      from: '2026-12-01',
      to: '2027-01-01',
    });
    expect(monthlyPartition('delivery_log', 2026, 13).name).toBe('delivery_log_p2027_01');
    expect(() => monthlyPartition('users', 2026, 1)).toThrow(/allowlist/);
  });
});

describe('partition manager on Postgres', () => {
  let tdb: TestDatabase;
  let db: Kysely<DB>;
  let logs: string[];
  const log = (m: string) => void logs.push(m);

  beforeAll(async () => {
    tdb = await createTestDatabase();
    db = connect(tdb.writerUrl);
  });

  beforeEach(() => {
    logs = [];
  });

  afterAll(async () => {
    await db?.destroy();
    await tdb?.drop();
  });

  async function catchAllLower(table: string): Promise<Date> {
    const { rows } = await sql<{ lower: Date }>`
      SELECT (regexp_match(pg_get_expr(c.relpartbound, c.oid), 'FROM \\(''([^'']+)''\\)'))[1]::timestamptz AS lower
        FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
       WHERE i.inhparent = ${table}::regclass AND c.relname = ${`${table}_p_future`}`.execute(db);
    expect(rows).toHaveLength(1);
    return rows[0].lower;
  }

  async function partitionNames(table: string): Promise<string[]> {
    const { rows } = await sql<{ relname: string }>`
      SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
       WHERE i.inhparent = ${table}::regclass ORDER BY 1`.execute(db);
    return rows.map((r) => r.relname);
  }

  async function insertEventAt(createdAt: Date): Promise<string> {
    const community = await db
      .insertInto('communities')
      .values({ host: `parts-${randomBytes(4).toString('hex')}.example` })
      .returning('id')
      .executeTakeFirstOrThrow();
    const row = await db
      .insertInto('events')
      .values({
        community_id: community.id,
        id: randomBytes(32),
        pubkey: randomBytes(32),
        created_at: createdAt,
        kind: 9,
        tags: '[]',
        content: '',
        sig: randomBytes(64),
      })
      .returning(sql<string>`tableoid::regclass::text`.as('partition'))
      .executeTakeFirstOrThrow();
    return row.partition;
  }

  it('rejects non-allowlisted tables, bad suffixes and bad dates before touching the database', async () => {
    await expect(ensurePartition(db, 'communities', '2026_07', '2026-07-01', '2026-08-01')).rejects.toThrow(/allowlist/);
    await expect(ensurePartition(db, 'events', '2026-07', '2026-07-01', '2026-08-01')).rejects.toThrow(/suffix/);
    await expect(ensurePartition(db, 'events', '2026_07', '2026-07-1', '2026-08-01')).rejects.toThrow(/date/);
    await expect(ensurePartition(db, 'events', '2026_07', '2026-08-01', '2026-07-01')).rejects.toThrow(/range/);
    for (const months of [-1, 1.5, 37, Number.NaN]) {
      await expect(ensureFuturePartitions(db, months)).rejects.toThrow(/monthsAhead/);
    }
  });

  it('does nothing for partitions that already exist', async () => {
    const before = await partitionNames('events');
    expect(await ensureFuturePartitions(db, 2, new Date('2026-03-10T12:00:00Z'), log)).toEqual([]);
    expect(await partitionNames('events')).toEqual(before);
    expect(logs).toEqual([]);
  });

  it('treats "would overlap partition" as success (months inside events_p_past)', async () => {
    const before = await partitionNames('events');
    expect(await ensureFuturePartitions(db, 1, new Date('2025-06-10T12:00:00Z'), log)).toEqual([]);
    expect(await partitionNames('events')).toEqual(before);
    expect(logs.filter((m) => m.includes('would overlap partition'))).toHaveLength(4);
    expect(logs.join('\n')).toContain('events_p2025_06');
  });

  it('splits an empty catch-all into monthly partitions and is idempotent', async () => {
    const lowers = await Promise.all(PARTITIONED_TABLES.map(catchAllLower));
    const current = monthStart(new Date(Math.max(...lowers.map((d) => d.getTime()))), 1);
    const horizon = monthStart(current, 1);

    const created = await ensureFuturePartitions(db, 1, midMonth(current), log);

    const expected = PARTITIONED_TABLES.flatMap((table, i) => monthNames(table, lowers[i], horizon));
    expect(created).toEqual(expected);
    for (const table of PARTITIONED_TABLES) {
      expect((await catchAllLower(table)).toISOString()).toBe(monthStart(horizon, 1).toISOString());
    }
    expect(logs.some((m) => m.startsWith('split empty catch-all events_p_future'))).toBe(true);

    expect(await ensureFuturePartitions(db, 1, midMonth(current), log)).toEqual([]);

    const target = monthlyPartition('events', current.getUTCFullYear(), current.getUTCMonth() + 1);
    expect(await insertEventAt(midMonth(current))).toBe(target.name);
  });

  it('gives split partitions every events index and the floor-guard trigger', async () => {
    const { rows } = await sql<{ missing: string }>`
      SELECT p.relid::regclass::text AS missing
        FROM pg_partition_tree('events'::regclass) p
       WHERE p.isleaf
         AND (NOT EXISTS (SELECT 1 FROM pg_trigger t
                           WHERE t.tgrelid = p.relid AND t.tgname = 'events_created_at_floor'
                             AND t.tgdeferrable AND t.tginitdeferred)
              OR (SELECT count(*) FROM pg_index x WHERE x.indrelid = p.relid)
                 <> (SELECT count(*) FROM pg_index x WHERE x.indrelid = 'events'::regclass))`.execute(db);
    expect(rows).toEqual([]);
  });

  it('serialises concurrent managers: every partition is created exactly once', async () => {
    const other = connect(tdb.writerUrl);
    try {
      const lowers = await Promise.all(PARTITIONED_TABLES.map(catchAllLower));
      const now = midMonth(monthStart(lowers[0], 1));
      const results = await Promise.all([
        ensureFuturePartitions(db, 2, now, log),
        ensureFuturePartitions(other, 2, now, log),
      ]);
      const all = results.flat();
      expect(new Set(all).size).toBe(all.length);
      const horizon = monthStart(now, 2);
      const expected = PARTITIONED_TABLES.flatMap((table, i) => monthNames(table, lowers[i], horizon));
      expect(all.sort()).toEqual(expected.sort());
    } finally {
      await other.destroy();
    }
  });

  it('leaves a catch-all that holds rows alone and reports the overlap as success', async () => {
    const lower = await catchAllLower('events');
    const dlLower = await catchAllLower('delivery_log');
    const farFuture = new Date(Date.UTC(lower.getUTCFullYear() + 10, 0, 15));
    expect(await insertEventAt(farFuture)).toBe('events_p_future');

    const created = await ensureFuturePartitions(db, 0, midMonth(lower), log);

    expect(created).toEqual(monthNames('delivery_log', dlLower, lower));
    expect((await catchAllLower('events')).toISOString()).toBe(lower.toISOString());
    expect(logs.some((m) => m.includes('events_p_future holds rows'))).toBe(true);
    expect(logs.some((m) => m.includes('would overlap partition'))).toBe(true);
  });

  it('skips (without failing) when the parent lock is not granted within lock_timeout', async () => {
    const lower = await catchAllLower('delivery_log');
    const target = monthlyPartition('delivery_log', lower.getUTCFullYear(), lower.getUTCMonth() + 1);
    const blocker = new pg.Client({ connectionString: tdb.writerUrl });
    blocker.on('error', () => undefined);
    await blocker.connect();
    try {
      await blocker.query('BEGIN');
      await blocker.query('LOCK TABLE delivery_log IN ACCESS SHARE MODE');
      expect(await ensureFuturePartitions(db, 0, midMonth(lower), log)).toEqual([]);
      expect(logs.some((m) => m.includes(`${target.name} skipped`))).toBe(true);
      await blocker.query('ROLLBACK');
      expect(await ensureFuturePartitions(db, 0, midMonth(lower), log)).toEqual([target.name]);
    } finally {
      await blocker.end();
    }
  });
});
