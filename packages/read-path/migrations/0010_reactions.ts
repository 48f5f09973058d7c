import { Kysely, sql } from 'kysely';

/**
 * NIP-25 reactions (relay.md §5.2 step 13): one active row per (actor, target, emoji). Ingest
 * upserts the row and stores the kind-7 event in one transaction; an active duplicate is
 * `duplicate: reaction already exists`. A deleted reaction keeps its row (`deleted_at`), so the
 * uniqueness is a partial index usable as an ON CONFLICT arbiter:
 * `ON CONFLICT (community_id, target_event_id, actor_pubkey, emoji) WHERE deleted_at IS NULL`.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    CREATE TABLE reactions (
      community_id      uuid        NOT NULL,
      target_event_id   bytea       NOT NULL,
      actor_pubkey      text        NOT NULL,
      emoji             text        NOT NULL,
      reaction_event_id bytea       NOT NULL,
      created_at        timestamptz NOT NULL DEFAULT now(),
      deleted_at        timestamptz,
      CONSTRAINT reactions_pkey PRIMARY KEY (community_id, reaction_event_id),
      CONSTRAINT reactions_actor_pubkey_hex CHECK (actor_pubkey ~ '^[0-9a-f]{64}$'),
      CONSTRAINT reactions_emoji_length CHECK (char_length(emoji) BETWEEN 1 AND 64)
    )
  `.execute(db);
  // Also serves "reactions on these targets" lookups (prefix community_id, target_event_id).
  await sql`
    CREATE UNIQUE INDEX uq_reactions_active
      ON reactions (community_id, target_event_id, actor_pubkey, emoji)
      WHERE deleted_at IS NULL
  `.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`DROP TABLE reactions`.execute(db);
}
