import { Kysely, sql } from 'kysely';

/**
 * `gen_random_uuid()` is used by column defaults (communities.id, channels.id,
 * replica_heartbeat.epoch) and by the fence probe's epoch rotation.
 *
 * PostgreSQL 13+ ships it in core. Older servers get it from `pgcrypto`, created only when the
 * function is missing so that a database owner without extension privileges can still migrate
 * on a modern server.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    DO $$
    BEGIN
      IF to_regprocedure('gen_random_uuid()') IS NULL THEN
        CREATE EXTENSION IF NOT EXISTS pgcrypto;
      END IF;
    END
    $$
  `.execute(db);
}

/**
 * Deliberately leaves the function in place: on PG13+ it is core, and on older servers
 * `pgcrypto` may be shared with objects this project does not own. Dropping it is an
 * operator decision, not a schema rollback.
 */
export async function down(_db: Kysely<any>): Promise<void> {
  // Nothing to undo (see above).
}
