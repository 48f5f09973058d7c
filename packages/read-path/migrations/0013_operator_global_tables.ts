import { Kysely, sql } from 'kysely';

/**
 * Registry of deployment-global tables: tables with no `community_id`, shared by every tenant.
 * Operator tooling (tenant export, per-community restore) must skip or special-case them.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    CREATE TABLE _operator_global_tables (
      table_name text PRIMARY KEY
    )
  `.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`DROP TABLE _operator_global_tables`.execute(db);
}
