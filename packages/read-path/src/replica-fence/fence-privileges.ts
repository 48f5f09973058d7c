/**
 * The start-up privilege check of the replica fence: what the probe's SQL
 * (fence-probe.ts), the floor-guard self-test (floor-guard-verifier.ts) and a routed read's proof
 * (routing/reader-tx.ts) need, asked of the catalog with `has_*_privilege` and `pg_has_role` (no
 * statement that fails, so nothing lands in Postgres's log). Without these the fence never opens
 * and every routed read is served by the writer; the check says so once, naming each privilege
 * and the role that lacks it.
 */
import { Client, type PoolClient } from 'pg';

export interface FenceRequirement {
  /** The privilege as an operator grants it: `pg_monitor`, `UPDATE on replica_heartbeat`. */
  readonly privilege: string;
  /** What needs it, in the library's words. */
  readonly neededBy: string;
  /** The table it is on, if any: a missing table is reported as such, not as a missing grant. */
  readonly table?: string;
  /** SQL boolean: whether role expression `role` holds it. */
  readonly held: (role: string) => string;
}

const onTable = (priv: 'SELECT' | 'INSERT' | 'UPDATE', table: string, neededBy: string): FenceRequirement => ({
  privilege: `${priv} on ${table}`,
  neededBy,
  table,
  held: (role) => `has_table_privilege(${role}, to_regclass('${table}'), '${priv}')`,
});

/** Of the writer role: the probe dials the writer's URL, and the floor guard is verified on a serving writer connection. */
export const WRITER_REQUIREMENTS: readonly FenceRequirement[] = [
  {
    // pg_monitor holds pg_read_all_stats, which is what unmasks other roles' sessions.
    privilege: 'pg_monitor',
    neededBy: 'the probe must see every session in pg_stat_activity',
    held: (role) => `pg_has_role(${role}, 'pg_read_all_stats', 'USAGE')`,
  },
  {
    privilege: 'EXECUTE on pg_advisory_xact_lock(bigint)',
    neededBy: "the probe's floor lock",
    held: (role) => `has_function_privilege(${role}, 'pg_advisory_xact_lock(bigint)', 'EXECUTE')`,
  },
  onTable('SELECT', 'replica_heartbeat', "the probe's heartbeat write"),
  onTable('UPDATE', 'replica_heartbeat', "the probe's heartbeat write"),
  onTable('INSERT', 'communities', 'the floor-guard self-test'),
  onTable('SELECT', 'communities', 'the floor-guard self-test'),
  onTable('INSERT', 'events', 'the floor-guard self-test'),
  onTable('SELECT', 'events', 'the floor-guard self-test'),
  onTable('UPDATE', 'events', 'the floor-guard self-test'),
  // The self-test's insert into events fires the tag index trigger (migration 0018), which runs
  // with the inserting role's rights.
  onTable('INSERT', 'event_tags', 'the floor-guard self-test: the tag index trigger on events'),
];

/** Of the reader role, checked in the writer's catalog (a streaming replica has the same roles and grants). */
export const READER_REQUIREMENTS: readonly FenceRequirement[] = [onTable('SELECT', 'replica_heartbeat', "a routed read's proof")];

export interface RoleShortfall {
  readonly role: string;
  /** Which option's connection string the role comes from. */
  readonly option: 'DatabaseModule writerUrl' | 'DatabaseModule readerUrl';
  readonly missing: readonly FenceRequirement[];
}

export interface FencePrivilegeReport {
  /** Tables the fence needs that do not exist (the relay's migrations not applied). */
  readonly missingTables: readonly string[];
  /** One entry per role that lacks something; empty when all is held. */
  readonly roles: readonly RoleShortfall[];
}

/** The role a connection string logs in as, resolved the way `pg` resolves it (URL, PGUSER, OS user). */
export function connectionRole(url: string): string {
  return new Client({ connectionString: url }).user ?? '';
}

/**
 * Asks the writer's catalog, in one statement, what the writer role (the session's) and the reader
 * role (by name) lack. A reader role the writer does not know is not checked.
 */
export async function checkFencePrivileges(writer: Pick<PoolClient, 'query'>, readerRole: string | undefined): Promise<FencePrivilegeReport> {
  const tables = [...new Set([...WRITER_REQUIREMENTS, ...READER_REQUIREMENTS].flatMap((r) => (r.table ? [r.table] : [])))];
  const reader = `(select oid from pg_roles where rolname = $1 and rolname <> current_user)`;
  const columns = [
    'current_user::text as role',
    `${reader} is not null as reader_known`,
    ...tables.map((t, i) => `to_regclass('${t}') is not null as t${i}`),
    ...WRITER_REQUIREMENTS.map((r, i) => `coalesce(${r.held('current_user')}, false) as w${i}`),
    ...READER_REQUIREMENTS.map((r, i) => `coalesce(${r.held(reader)}, true) as r${i}`),
  ];
  const { rows } = await writer.query<Record<string, boolean | string>>(`select ${columns.join(', ')}`, [readerRole ?? null]);
  const row = rows[0];
  const missingTables = tables.filter((_, i) => row[`t${i}`] !== true);
  const lacking = (reqs: readonly FenceRequirement[], prefix: string) =>
    reqs.filter((r, i) => row[`${prefix}${i}`] !== true && !(r.table && missingTables.includes(r.table)));
  const roles: RoleShortfall[] = [];
  const writerMissing = lacking(WRITER_REQUIREMENTS, 'w');
  if (writerMissing.length > 0) roles.push({ role: String(row.role), option: 'DatabaseModule writerUrl', missing: writerMissing });
  const readerMissing = row.reader_known === true ? lacking(READER_REQUIREMENTS, 'r') : [];
  if (readerMissing.length > 0) roles.push({ role: readerRole!, option: 'DatabaseModule readerUrl', missing: readerMissing });
  return { missingTables, roles };
}

/** What is missing, for the one start-up message (`role "app" (DatabaseModule writerUrl) lacks pg_monitor (…)`), or undefined. */
export function fencePrivilegeShortfall(report: FencePrivilegeReport): string | undefined {
  const parts: string[] = [];
  if (report.missingTables.length > 0) {
    parts.push(`the writer has no ${report.missingTables.join(', ')} (the relay's migrations are not applied: DatabaseModule migrate)`);
  }
  for (const { role, option, missing } of report.roles) {
    parts.push(`role "${role}" (${option}) lacks ${missing.map((r) => `${r.privilege} (${r.neededBy})`).join(', ')}`);
  }
  return parts.length === 0 ? undefined : parts.join('; ');
}
