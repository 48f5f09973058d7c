import { Kysely, RawBuilder, Transaction, sql } from 'kysely';

import { PARTITION_MANAGER_LOCK_KEY } from './constants.js';

/**
 * Monthly range partitions for `events` and `delivery_log` (database.md §1.1).
 *
 * `ensureFuturePartitions(months_ahead)` runs at startup (and is meant to run monthly). For each
 * month offset 0..=monthsAhead it makes sure `<table>_pYYYY_MM` exists:
 * - a partition of that name already exists: nothing to do;
 * - otherwise it is created;
 * - creation fails with "would overlap partition": an existing partition already covers the
 *   range. That is logged (info) and treated as success, as upstream does.
 *
 * Design choice for this project (catch-all split): the initial schema ends in a catch-all
 * `<table>_p_future` (2026-07-01 → MAXVALUE). Taken literally, the rule above means every month
 * from July 2026 on lands in that one partition forever, and monthly partitioning silently stops.
 * So when the overlapping partition is the catch-all (upper bound MAXVALUE, month-aligned lower
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
 * Creates `<table>_p<suffix>` for [from, to) unless a partition of that name exists. An
 * overlap with an existing partition is success (`covered`), or a split of the empty catch-all.
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
    const created = await inDdlTransaction(db, (trx) => createIfMissing(trx, table, name, from, to));
    return created ? { outcome: 'created', created: [name] } : { outcome: 'exists', created: [] };
  } catch (error) {
    if (isOverlapError(error)) return splitOrCover(db, table, name, from, to, error, log);
    if (pgCode(error) === LOCK_NOT_AVAILABLE) return skipped(name, error, log);
    if (pgCode(error) === DUPLICATE_TABLE) return { outcome: 'exists', created: [] };
    throw error;
  }
}

async function splitOrCover(
  db: Kysely<any>,
  table: PartitionedTable,
  name: string,
  from: string,
  to: string,
  overlap: unknown,
  log: Log,
): Promise<EnsurePartitionResult> {
  let split: string[] | null;
  try {
    split = await inDdlTransaction(db, (trx) => trySplitCatchAll(trx, table, name, from, to, log));
  } catch (error) {
    if (pgCode(error) === LOCK_NOT_AVAILABLE) return skipped(name, error, log);
    throw error;
  }
  if (split === null) {
    log(`partition ${name} not created: ${errorMessage(overlap)}; the existing partition covers ${from} → ${to}`);
    return { outcome: 'covered', created: [] };
  }
  // [] means another pod created the partition between our two transactions.
  return split.length > 0 ? { outcome: 'split', created: split } : { outcome: 'exists', created: [] };
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
  await sql`
    CREATE TABLE ${sql.id(name)} PARTITION OF ${sql.id(table)}
      FOR VALUES FROM (${utcBound(from)}) TO (${to === null ? sql.raw('MAXVALUE') : utcBound(to)})
  `.execute(trx);
  return true;
}

interface CatchAll {
  readonly name: string;
  /** Lower bound as an ISO instant, or null when it is MINVALUE or unparsable. */
  readonly lower: Date | null;
}

/**
 * Splits the catch-all when it is empty and starts on a month boundary at or before `from`.
 * Returns the partitions created ([] when `name` appeared meanwhile), or null when the
 * catch-all cannot be split.
 */
async function trySplitCatchAll(
  trx: Transaction<any>,
  table: PartitionedTable,
  name: string,
  from: string,
  to: string,
  log: Log,
): Promise<string[] | null> {
  if (await relationExists(trx, name)) return [];
  const catchAll = await findCatchAll(trx, table);
  if (catchAll === null || !isSplittable(catchAll, from)) return null;
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
  catchAll: { name: string; lower: Date },
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

function isSplittable(catchAll: CatchAll, from: string): catchAll is CatchAll & { lower: Date } {
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

/** The partition of `table` whose upper bound is MAXVALUE, with its lower bound. */
async function findCatchAll(trx: Transaction<any>, table: PartitionedTable): Promise<CatchAll | null> {
  // pg_get_expr renders the bound as "FOR VALUES FROM ('<timestamptz>') TO (MAXVALUE)" in this
  // session's TimeZone/DateStyle; casting it back in the same session reads it correctly.
  const { rows } = await sql<{ name: string; lower: Date | null }>`
    SELECT c.relname AS name,
           (regexp_match(pg_get_expr(c.relpartbound, c.oid),
                         '^FOR VALUES FROM \\(''([^'']+)''\\) TO \\(MAXVALUE\\)$'))[1]::timestamptz AS lower
      FROM pg_inherits i
      JOIN pg_class c ON c.oid = i.inhrelid
     WHERE i.inhparent = ${table}::regclass
       AND pg_get_expr(c.relpartbound, c.oid) LIKE '% TO (MAXVALUE)'
  `.execute(trx);
  return rows.length === 1 ? { name: rows[0].name, lower: rows[0].lower } : null;
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
