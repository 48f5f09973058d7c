import {
  Kysely,
  Migration,
  MigrationProvider,
  MigrationResultSet,
  Migrator,
  NO_MIGRATIONS,
} from 'kysely';

import { migrations } from '../../migrations/index.js';

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

export function createMigrator(db: Kysely<any>): Migrator {
  const provider: MigrationProvider = {
    getMigrations: async (): Promise<Record<string, Migration>> => migrations,
  };
  return new Migrator({ db, provider });
}

/** Applies every pending migration. Returns the names applied, in order (empty if up to date). */
export async function migrateToLatest(db: Kysely<any>): Promise<string[]> {
  return unwrap('Up', await createMigrator(db).migrateToLatest());
}

/** Reverts the most recently applied migration. Returns the name reverted (if any). */
export async function migrateDownOne(db: Kysely<any>): Promise<string[]> {
  return unwrap('Down', await createMigrator(db).migrateDown());
}

/** Reverts every applied migration, newest first. Destroys all data: tests and tooling only. */
export async function migrateDownAll(db: Kysely<any>): Promise<string[]> {
  return unwrap('Down', await createMigrator(db).migrateTo(NO_MIGRATIONS));
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
