import { Kysely, sql } from 'kysely';

/**
 * `thread_metadata` (database.md §1.4, relay.md §1.1): materialised at ingest for NIP-10 replies
 * and thread roots. `channel_id NOT NULL` is what makes a page joined from this table provably
 * channel-bearing (a channel-scope proof, database.md §2.3), so it must never be relaxed.
 * Invariant kept by ingest: a reply insert/removal updates the parent's `reply_count` and the
 * root's `descendant_count`.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    CREATE TABLE thread_metadata (
      community_id            uuid        NOT NULL,
      event_created_at        timestamptz NOT NULL,
      event_id                bytea       NOT NULL,
      channel_id              uuid        NOT NULL,
      parent_event_id         bytea,
      parent_event_created_at timestamptz,
      root_event_id           bytea,
      root_event_created_at   timestamptz,
      depth                   integer     NOT NULL DEFAULT 0,
      reply_count             integer     NOT NULL DEFAULT 0,
      descendant_count        integer     NOT NULL DEFAULT 0,
      last_reply_at           timestamptz,
      broadcast               boolean     NOT NULL DEFAULT false,
      CONSTRAINT thread_metadata_pkey PRIMARY KEY (community_id, event_created_at, event_id),
      CONSTRAINT thread_metadata_counts_non_negative CHECK (
        depth >= 0 AND reply_count >= 0 AND descendant_count >= 0
      )
    )
  `.execute(db);
  // Thread replies walk forward from a root (relay.md §3.6): (created_at, id) keyset per root.
  await sql`
    CREATE INDEX idx_thread_metadata_root_created
      ON thread_metadata (community_id, root_event_id, event_created_at, event_id)
      WHERE root_event_id IS NOT NULL
  `.execute(db);
  // Direct children of a parent: reply_count maintenance and reply removal.
  await sql`
    CREATE INDEX idx_thread_metadata_parent
      ON thread_metadata (community_id, parent_event_id)
      WHERE parent_event_id IS NOT NULL
  `.execute(db);
  // Channel windows joined from thread_metadata (newest first, id tiebreak).
  await sql`
    CREATE INDEX idx_thread_metadata_channel_created
      ON thread_metadata (community_id, channel_id, event_created_at DESC, event_id)
  `.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`DROP TABLE thread_metadata`.execute(db);
}
