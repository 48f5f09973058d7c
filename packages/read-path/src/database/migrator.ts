import type { Kysely } from 'kysely';
import { type Migration, migrations } from '../../migrations/index.js';

/**
 * Runs the static migration set (migrations/index.ts). Kysely's Postgres adapter takes a
 * session-level advisory lock around the run and applies all pending migrations in one
 * transaction, so concurrent pods booting with `BUZZ_AUTO_MIGRATE` serialise safely and a
 * failure leaves the schema where it was.
 */

/** A migration run failed; `migrationName` is the failing migration when Kysely got that far. */
export class MigrationFailedError extends Error {
  constructor(
    readonly direction: 'Up' | 'Down',
    readonly migrationName: string | undefined,
    cause: unknown,
  ) {
    const where = migrationName === undefined ? 'before any migration ran' : `in ${migrationName}`;
    super(`migration ${direction.toLowerCase()} failed ${where}: ${describe(cause)}`, { cause });
    this.name = 'MigrationFailedError';
  }
}

/** What this file uses of Kysely's migrator. */
interface MigrationResultSet {
  readonly error?: unknown;
  readonly results?: readonly { readonly migrationName: string; readonly status: 'Success' | 'Error' | 'NotExecuted' }[];
}

interface MigrationRunner {
  migrateToLatest(): Promise<MigrationResultSet>;
  migrateDown(): Promise<MigrationResultSet>;
  migrateTo(target: unknown): Promise<MigrationResultSet>;
}

interface MigrationModule {
  readonly Migrator: new (props: { db: Kysely<any>; provider: { getMigrations(): Promise<Record<string, Migration>> } }) => MigrationRunner;
  readonly NO_MIGRATIONS: unknown;
}

let migrationModule: Promise<MigrationModule> | undefined;

/**
 * Kysely's Migrator, from where the installed kysely has it: 0.28 exports it from `kysely`, 0.29
 * from `kysely/migration` only (its root export is gone at run time). The package's kysely peer
 * range takes both, so the app's own kysely decides.
 */
function kyselyMigration(): Promise<MigrationModule> {
  migrationModule ??= (async () => {
    const root = (await import('kysely')) as unknown as Partial<MigrationModule>;
    if (typeof root.Migrator === 'function') return root as MigrationModule;
    // A variable, not a literal: kysely 0.28's declarations have no such subpath to type it with.
    const subpath: string = 'kysely/migration';
    return (await import(subpath)) as MigrationModule;
  })();
  return migrationModule;
}

async function run(db: Kysely<any>, direction: 'Up' | 'Down', step: (migrator: MigrationRunner, kysely: MigrationModule) => Promise<MigrationResultSet>): Promise<string[]> {
  const kysely = await kyselyMigration();
  const migrator = new kysely.Migrator({ db, provider: { getMigrations: async () => migrations } });
  return unwrap(direction, await step(migrator, kysely));
}

/** Applies every pending migration. Returns the names applied, in order (empty if up to date). */
export function migrateToLatest(db: Kysely<any>): Promise<string[]> {
  return run(db, 'Up', (migrator) => migrator.migrateToLatest());
}

/** Reverts the most recently applied migration. Returns the name reverted (if any). */
export function migrateDownOne(db: Kysely<any>): Promise<string[]> {
  return run(db, 'Down', (migrator) => migrator.migrateDown());
}

/** Reverts every applied migration, newest first. Destroys all data: tests and tooling only. */
export function migrateDownAll(db: Kysely<any>): Promise<string[]> {
  return run(db, 'Down', (migrator, kysely) => migrator.migrateTo(kysely.NO_MIGRATIONS));
}

function unwrap(direction: 'Up' | 'Down', resultSet: MigrationResultSet): string[] {
  const results = resultSet.results ?? [];
  if (resultSet.error !== undefined) {
    const failed = results.find((result) => result.status === 'Error');
    throw new MigrationFailedError(direction, failed?.migrationName, resultSet.error);
  }
  return results
    .filter((result) => result.status === 'Success')
    .map((result) => result.migrationName);
}

function describe(cause: unknown): string {
  if (cause instanceof Error) {
    const code = (cause as { code?: unknown }).code;
    const sqlState = typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code);
    return sqlState ? `${cause.message} (SQLSTATE ${code})` : cause.message;
  }
  return String(cause);
}
