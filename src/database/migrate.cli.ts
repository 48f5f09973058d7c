/**
 * `npm run migrate`: applies pending migrations to DATABASE_URL, then makes sure the monthly
 * partitions exist (BUZZ_PARTITION_MONTHS_AHEAD, default 3), and prints what it did. Exits
 * non-zero on any failure. Safe to run while relays are up and from several places at once:
 * the migrator and the partition manager each take an advisory lock.
 */
import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';

import { loadConfig } from '../config/app-config.js';
import { migrateToLatest } from '@buzz-relay/read-path';
import { ensureFuturePartitions } from '@buzz-relay/read-path/internal';

async function main(): Promise<void> {
  const config = loadConfig(process.env);
  const url = config.database.url;
  if (url === undefined) {
    throw new Error('DATABASE_URL is not set: point it at the writer, e.g. postgres://user@host:5432/buzz');
  }
  const pool = new pg.Pool({ connectionString: url, max: 1, application_name: 'buzz-migrate' });
  pool.on('error', (error) => console.error(`migrate: idle connection failed: ${error.message}`));
  const db = new Kysely<unknown>({ dialect: new PostgresDialect({ pool }) });
  try {
    const applied = await migrateToLatest(db);
    console.log(
      applied.length === 0
        ? 'migrate: schema already up to date'
        : `migrate: applied ${applied.length} migration(s): ${applied.join(', ')}`,
    );
    const months = config.database.partitionMonthsAhead;
    const created = await ensureFuturePartitions(db, months, new Date(), (m) => console.log(`migrate: ${m}`));
    console.log(
      created.length === 0
        ? `migrate: partitions present for this month and ${months} ahead`
        : `migrate: created ${created.length} partition(s): ${created.join(', ')}`,
    );
  } finally {
    await db.destroy();
  }
}

main().catch((error: unknown) => {
  const message = error instanceof Error ? error.message : String(error);
  console.error(`migrate: failed: ${message}`);
  process.exitCode = 1;
});
