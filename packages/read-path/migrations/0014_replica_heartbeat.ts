import { Kysely, sql } from 'kysely';

/**
 * `replica_heartbeat` (database.md §1.5): the only table the fence probe writes. Exactly one
 * deployment-global row; every pod's probe increments the same `token`, so the row lock
 * commit-orders tokens across the fleet. `epoch` rotates only on a same-epoch token
 * regression (a restore).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    CREATE TABLE replica_heartbeat (
      id    smallint PRIMARY KEY CHECK (id = 1),
      epoch uuid     NOT NULL DEFAULT gen_random_uuid(),
      token bigint   NOT NULL DEFAULT 0
    )
  `.execute(db);
  await sql`INSERT INTO replica_heartbeat (id) VALUES (1)`.execute(db);
  await sql`
    INSERT INTO _operator_global_tables (table_name) VALUES ('replica_heartbeat')
  `.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`
    DELETE FROM _operator_global_tables WHERE table_name = 'replica_heartbeat'
  `.execute(db);
  await sql`DROP TABLE replica_heartbeat`.execute(db);
}
