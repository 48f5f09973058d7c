import { Kysely, sql } from 'kysely';

/**
 * `artifact_heads` (database.md §1.4): the current head event of each kind-45010 artifact.
 * Generic event reads exclude kind-45010 rows that are not listed here, unless explicit ids
 * are requested. Deliberately no foreign key to `events` (§1.1).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    CREATE TABLE artifact_heads (
      community_id uuid  NOT NULL,
      event_id     bytea NOT NULL,
      CONSTRAINT artifact_heads_pkey PRIMARY KEY (community_id, event_id)
    )
  `.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`DROP TABLE artifact_heads`.execute(db);
}
