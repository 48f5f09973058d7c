import { Kysely, sql } from 'kysely';

/**
 * `event_mentions` (database.md §1.4): one row per well-formed 64-hex `p` tag, so `#p` filters
 * and the mentions feed never scan `tags`. The join back to `events` must carry both keys:
 * `e.community_id = m.community_id AND e.id = m.event_id`.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    CREATE TABLE event_mentions (
      community_id     uuid        NOT NULL,
      pubkey_hex       varchar(64) NOT NULL,
      event_id         bytea       NOT NULL,
      event_created_at timestamptz NOT NULL,
      channel_id       uuid,
      event_kind       integer     NOT NULL,
      CONSTRAINT event_mentions_pkey PRIMARY KEY (community_id, pubkey_hex, event_id),
      CONSTRAINT event_mentions_pubkey_hex CHECK (pubkey_hex ~ '^[0-9a-f]{64}$')
    )
  `.execute(db);
  await sql`
    CREATE INDEX idx_event_mentions_pubkey_created
      ON event_mentions (community_id, pubkey_hex, event_created_at DESC)
  `.execute(db);
  await sql`
    CREATE INDEX idx_event_mentions_pubkey_kind_created
      ON event_mentions (community_id, pubkey_hex, event_kind, event_created_at DESC)
  `.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`DROP TABLE event_mentions`.execute(db);
}
