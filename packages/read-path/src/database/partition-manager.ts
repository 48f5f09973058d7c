import { Kysely, RawBuilder, Transaction, sql } from 'kysely';

import { PARTITION_MANAGER_LOCK_KEY } from './constants.js';

/**
 * Monthly range partitions for `events` and `delivery_log` (database.md §1.1).
 *
 * `ensureFuturePartitions(months_ahead)` runs at startup (and is meant to run monthly). For each
 * month offset 0..=monthsAhead it makes sure `<table>_pYYYY_MM` exists:
 * - a partition of that name already exists: nothing to do;
 * - an existing partition already covers part of the range (Postgres would refuse the CREATE
 *   with "would overlap partition"): that is logged (info) and treated as success, as upstream
 *   does;
 * - otherwise it is created.
 * The overlap is read from the catalog (each partition's bound) before anything is created,
 * rather than learned from a failed CREATE: a failed statement writes an ERROR line to the server
 * log, and a normal start must leave none there for operators to chase. Only a partition made
 * meanwhile by something that does not take our advisory lock (a hand-written CREATE) can still
 * make the CREATE fail; that failure is treated the same way.
 *
 * Design choice for this project (catch-all split): the initial schema ends in a catch-all
 * `<table>_p_future` (2026-07-01 → MAXVALUE). Taken literally, the rule above means every month
 * from July 2026 on lands in that one partition forever, and monthly partitioning silently stops.
 * So when the covering partition is the catch-all (upper bound MAXVALUE, month-aligned lower
 * bound at or before the target) **and it holds no rows**, the manager splits it instead, in one
 * transaction and under lock: drop the empty catch-all, create the monthly partitions from its
 * old lower bound through the target month, and re-create the catch-all above them. No row moves,
 * so the split is lossless and invisible to the replica fence (no row appears below the wall).
 * A catch-all that already holds rows is left alone (the upstream info-and-succeed path); split it
 * by hand with the fence closed.
 *
 * Every DDL transaction takes a transaction-scoped advisory lock (pods booting together serialise)
 * and a short `lock_timeout`: partition DDL needs an ACCESS EXCLUSIVE lock on the parent, and a
 * long wait for it would stall every channel write queued behind it.
 *
 * Over 350 lines: most of it is the catch-all split, explained where it is done.
 */

export const PARTITIONED_TABLES = ['events', 'delivery_log'] as const;
export type PartitionedTable = (typeof PARTITIONED_TABLES)[number];

/** `lock_timeout` for partition DDL transactions. */
export const PARTITION_DDL_LOCK_TIMEOUT_MS = 2000;

/** Upper bound on `monthsAhead` (matches BUZZ_PARTITION_MONTHS_AHEAD); catches unit mistakes. */
export const MAX_MONTHS_AHEAD = 36;

export type Log = (message: string) => void;

/**
 * - `created`: a new partition;
 * - `exists`: a partition of that name already exists;
 * - `covered`: creation would overlap an existing partition, which keeps holding the range;
 * - `split`: the empty catch-all was split to make room;
 * - `skipped`: `lock_timeout` expired waiting for the parent; the next run retries.
 */
export type PartitionOutcome = 'created' | 'exists' | 'covered' | 'split' | 'skipped';

export interface MonthlyPartition {
  readonly table: PartitionedTable;
  /** `YYYY_MM` */
  readonly suffix: string;
  /** `<table>_p<suffix>` */
  readonly name: string;
  /** inclusive lower bound, `YYYY-MM-DD` (UTC midnight) */
  readonly from: string;
  /** exclusive upper bound, `YYYY-MM-DD` (UTC midnight) */
  readonly to: string;
}

export interface EnsurePartitionResult {
  readonly outcome: PartitionOutcome;
  /** Partitions this call created (several when a split fills the months below the target). */
  readonly created: string[];
}

const SUFFIX_PATTERN = /^[0-9_]+$/;
const DATE_PATTERN = /^(\d{4})-(\d{2})-(\d{2})$/;
const LOCK_NOT_AVAILABLE = '55P03';
const DUPLICATE_TABLE = '42P07';

export function assertPartitionedTable(table: string): asserts table is PartitionedTable {
  if (!(PARTITIONED_TABLES as readonly string[]).includes(table)) {
    throw new Error(`partition manager: table ${JSON.stringify(table)} is not in the allowlist`);
  }
}

export function assertPartitionSuffix(suffix: string): void {
  if (!SUFFIX_PATTERN.test(suffix)) {
    throw new Error(`partition manager: invalid suffix ${JSON.stringify(suffix)} (digits and _ only)`);
  }
}

/** A real calendar date written `YYYY-MM-DD`. */
export function assertPartitionDate(date: string): void {
  const match = DATE_PATTERN.exec(date);
  const valid =
    match !== null && toDateString(utcDate(+match[1], +match[2] - 1, +match[3])) === date;
  if (!valid) {
    throw new Error(`partition manager: invalid date ${JSON.stringify(date)} (want YYYY-MM-DD)`);
  }
}

/** The partition holding month `month` (1–12) of `year`. */
export function monthlyPartition(table: string, year: number, month: number): MonthlyPartition {
  assertPartitionedTable(table);
  const start = utcDate(year, month - 1, 1);
  const end = utcDate(year, month, 1);
  const suffix = `${start.getUTCFullYear()}_${pad2(start.getUTCMonth() + 1)}`;
  return { table, suffix, name: `${table}_p${suffix}`, from: toDateString(start), to: toDateString(end) };
}

/**
 * Creates `<table>_p<suffix>` for [from, to) unless a partition of that name exists. A range an
 * existing partition already covers is success (`covered`), or a split of the empty catch-all.
 * A lock timeout is `skipped`: the range stays where it is today and the next run retries.
 */
export async function ensurePartition(
  db: Kysely<any>,
  table: string,
  suffix: string,
  from: string,
  to: string,
  log: Log = () => undefined,
): Promise<EnsurePartitionResult> {
  assertPartitionedTable(table);
  assertPartitionSuffix(suffix);
  assertPartitionDate(from);
  assertPartitionDate(to);
  if (from >= to) {
    throw new Error(`partition manager: empty range ${from} → ${to}`);
  }
  const name = `${table}_p${suffix}`;
  try {
    return await inDdlTransaction(db, (trx) => createSplitOrCover(trx, table, name, from, to, log));
  } catch (error) {
    // The catalog said the range was free and the name unused, so a partition appeared after
    // that read without taking our advisory lock; it holds the range now, as it would have if
    // it had come first.
    if (isOverlapError(error)) return covered(name, from, to, errorMessage(error), log);
    if (pgCode(error) === DUPLICATE_TABLE) return { outcome: 'exists', created: [] };
    if (pgCode(error) === LOCK_NOT_AVAILABLE) return skipped(name, error, log);
    throw error;
  }
}

/** Runs under the advisory lock, so no other manager changes the partitions between its reads and its DDL. */
async function createSplitOrCover(
  trx: Transaction<any>,
  table: PartitionedTable,
  name: string,
  from: string,
  to: string,
  log: Log,
): Promise<EnsurePartitionResult> {
  if (await relationExists(trx, name)) return { outcome: 'exists', created: [] };
  const overlap = await findOverlap(trx, table, from, to);
  if (overlap === null) {
    await createPartition(trx, table, name, from, to);
    return { outcome: 'created', created: [name] };
  }
  if (overlap.catchAll && isSplittable(overlap, from)) {
    const split = await splitIfEmpty(trx, table, overlap, to, log);
    if (split !== null) return { outcome: 'split', created: split };
  }
  return covered(name, from, to, `it would overlap partition "${overlap.name}"`, log);
}

function covered(name: string, from: string, to: string, reason: string, log: Log): EnsurePartitionResult {
  log(`partition ${name} not created: ${reason}; the existing partition covers ${from} → ${to}`);
  return { outcome: 'covered', created: [] };
}

function skipped(name: string, error: unknown, log: Log): EnsurePartitionResult {
  log(`partition ${name} skipped: ${errorMessage(error)} (lock_timeout ${PARTITION_DDL_LOCK_TIMEOUT_MS} ms); the next run retries`);
  return { outcome: 'skipped', created: [] };
}

/**
 * Makes sure the monthly partitions for the current month (UTC) and the next `monthsAhead`
 * months exist for every allowlisted table. Returns the names of the partitions it created.
 */
export async function ensureFuturePartitions(
  db: Kysely<any>,
  monthsAhead: number,
  now: Date = new Date(),
  log: Log = () => undefined,
): Promise<string[]> {
  if (!Number.isInteger(monthsAhead) || monthsAhead < 0 || monthsAhead > MAX_MONTHS_AHEAD) {
    throw new Error(`partition manager: monthsAhead must be an integer in 0..${MAX_MONTHS_AHEAD}`);
  }
  if (Number.isNaN(now.getTime())) {
    throw new Error('partition manager: invalid "now"');
  }
  const created: string[] = [];
  for (const table of PARTITIONED_TABLES) {
    for (let offset = 0; offset <= monthsAhead; offset++) {
      const month = monthlyPartition(table, now.getUTCFullYear(), now.getUTCMonth() + 1 + offset);
      const result = await ensurePartition(db, table, month.suffix, month.from, month.to, log);
      created.push(...result.created);
    }
  }
  return created;
}

async function inDdlTransaction<T>(db: Kysely<any>, work: (trx: Transaction<any>) => Promise<T>): Promise<T> {
  return db.transaction().execute(async (trx) => {
    await sql`SELECT set_config('lock_timeout', ${String(PARTITION_DDL_LOCK_TIMEOUT_MS)}, true)`.execute(trx);
    await sql`SELECT pg_advisory_xact_lock(${PARTITION_MANAGER_LOCK_KEY}::bigint)`.execute(trx);
    return work(trx);
  });
}

async function createIfMissing(
  trx: Transaction<any>,
  table: PartitionedTable,
  name: string,
  from: string,
  to: string | null,
): Promise<boolean> {
  if (await relationExists(trx, name)) return false;
  await createPartition(trx, table, name, from, to);
  return true;
}

async function createPartition(
  trx: Transaction<any>,
  table: PartitionedTable,
  name: string,
  from: string,
  to: string | null,
): Promise<void> {
  await sql`
    CREATE TABLE ${sql.id(name)} PARTITION OF ${sql.id(table)}
      FOR VALUES FROM (${utcBound(from)}) TO (${to === null ? sql.raw('MAXVALUE') : utcBound(to)})
  `.execute(trx);
}

interface Overlap {
  readonly name: string;
  /** Lower bound as an ISO instant, or null when it is MINVALUE. */
  readonly lower: Date | null;
  /** The upper bound is MAXVALUE. */
  readonly catchAll: boolean;
}

/**
 * Splits the catch-all when it holds no rows: returns the partitions created, or null (logged)
 * when it holds rows. The caller checked that it starts on a month boundary at or before the target.
 */
async function splitIfEmpty(
  trx: Transaction<any>,
  table: PartitionedTable,
  catchAll: Overlap & { lower: Date },
  to: string,
  log: Log,
): Promise<string[] | null> {
  // Parent first, then the partition: the order DML takes them in. With both held, no
  // insert (through the parent or straight into the partition) can land while we check.
  await sql`LOCK TABLE ONLY ${sql.id(table)}, ONLY ${sql.id(catchAll.name)} IN ACCESS EXCLUSIVE MODE`.execute(trx);
  if (await hasRows(trx, catchAll.name)) {
    log(`catch-all ${catchAll.name} holds rows; not splitting it (split it by hand with the replica fence closed)`);
    return null;
  }
  return splitEmptyCatchAll(trx, table, catchAll, to, log);
}

async function splitEmptyCatchAll(
  trx: Transaction<any>,
  table: PartitionedTable,
  catchAll: Overlap & { lower: Date },
  to: string,
  log: Log,
): Promise<string[]> {
  await sql`DROP TABLE ${sql.id(catchAll.name)}`.execute(trx);
  const created: string[] = [];
  const year = catchAll.lower.getUTCFullYear();
  let month = catchAll.lower.getUTCMonth() + 1;
  for (let part = monthlyPartition(table, year, month); part.from < to; part = monthlyPartition(table, year, ++month)) {
    if (await createIfMissing(trx, table, part.name, part.from, part.to)) created.push(part.name);
  }
  await createIfMissing(trx, table, catchAll.name, to, null);
  log(`split empty catch-all ${catchAll.name}: created ${created.join(', ')}; ${catchAll.name} now starts at ${to}`);
  return created;
}

function isSplittable(catchAll: Overlap, from: string): catchAll is Overlap & { lower: Date } {
  const lower = catchAll.lower;
  if (lower === null) return false;
  const monthAligned =
    lower.getUTCDate() === 1 &&
    lower.getUTCHours() === 0 &&
    lower.getUTCMinutes() === 0 &&
    lower.getUTCSeconds() === 0 &&
    lower.getUTCMilliseconds() === 0;
  return monthAligned && toDateString(lower) <= from;
}

/**
 * The partition of `table` that a partition for [from, to) would overlap (the lowest, should
 * several), or null when the range is free. A DEFAULT partition has no range and is not counted:
 * Postgres does not refuse a CREATE because of it.
 */
async function findOverlap(trx: Transaction<any>, table: PartitionedTable, from: string, to: string): Promise<Overlap | null> {
  // pg_get_expr renders the bound as "FOR VALUES FROM ('<timestamptz>'|MINVALUE) TO (...|MAXVALUE)"
  // in this session's TimeZone/DateStyle; casting it back in the same session reads it correctly.
  // Reading pg_inherits with the statement's snapshot (taken after the advisory lock) sees every
  // partition another manager committed while we waited.
  const { rows } = await sql<Overlap>`
    SELECT p.name, p.lower, p.upper IS NULL AS "catchAll"
      FROM (SELECT c.relname AS name, b[1]::timestamptz AS lower, b[2]::timestamptz AS upper
              FROM pg_inherits i
              JOIN pg_class c ON c.oid = i.inhrelid
             CROSS JOIN LATERAL regexp_match(
                     pg_get_expr(c.relpartbound, c.oid),
                     '^FOR VALUES FROM \\((?:''([^'']+)''|MINVALUE)\\) TO \\((?:''([^'']+)''|MAXVALUE)\\)$') AS m(b)
             WHERE i.inhparent = ${table}::regclass AND m.b IS NOT NULL) p
     WHERE coalesce(p.lower, '-infinity') < ${utcBound(to)}::timestamptz
       AND coalesce(p.upper, 'infinity') > ${utcBound(from)}::timestamptz
     ORDER BY p.lower NULLS FIRST
     LIMIT 1
  `.execute(trx);
  return rows[0] ?? null;
}

/**
 * Reads pg_class with the statement's own snapshot rather than through the relation cache
 * (`to_regclass`): after waiting on the advisory lock, a cached "no such relation" could still
 * hide the partition another pod has just committed.
 */
async function relationExists(trx: Transaction<any>, name: string): Promise<boolean> {
  const { rows } = await sql<{ exists: boolean }>`
    SELECT EXISTS (SELECT 1 FROM pg_class c WHERE c.relname = ${name} AND pg_table_is_visible(c.oid)) AS exists
  `.execute(trx);
  return rows[0].exists;
}

async function hasRows(trx: Transaction<any>, name: string): Promise<boolean> {
  const { rows } = await sql<{ exists: boolean }>`
    SELECT EXISTS (SELECT 1 FROM ONLY ${sql.id(name)}) AS exists
  `.execute(trx);
  return rows[0].exists;
}

/** A timestamptz bound literal pinned to UTC; a bare date would be read in the session TimeZone. */
function utcBound(date: string): RawBuilder<unknown> {
  assertPartitionDate(date);
  return sql.lit(`${date} 00:00:00+00`);
}

function isOverlapError(error: unknown): boolean {
  return errorMessage(error).includes('would overlap partition');
}

function pgCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function utcDate(year: number, monthIndex: number, day: number): Date {
  return new Date(Date.UTC(year, monthIndex, day));
}

function toDateString(date: Date): string {
  return `${date.getUTCFullYear()}-${pad2(date.getUTCMonth() + 1)}-${pad2(date.getUTCDate())}`;
}

function pad2(n: number): string {
  return String(n).padStart(2, '0');
}
