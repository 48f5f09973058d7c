import { Kysely, sql } from 'kysely';

/**
 * The NIP-29 group id a channel was created with when it is not the channel's UUID (NDK's default
 * ids, `pizza`): the channel's id is then derived from it (src/channels/group-id.ts), and the state
 * the relay signs names the group by it. Null for a channel whose group id is its UUID.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    ALTER TABLE channels
      ADD COLUMN group_id text,
      ADD CONSTRAINT channels_group_id CHECK (group_id ~ '^[A-Za-z0-9_-]{1,64}$')
  `.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`ALTER TABLE channels DROP COLUMN group_id`.execute(db);
}
