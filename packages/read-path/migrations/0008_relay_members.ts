import { Kysely, sql } from 'kysely';

/**
 * `relay_members` (database.md §1.4, relay.md §1.1): NIP-43 relay membership, the gate behind
 * `BUZZ_REQUIRE_RELAY_MEMBERSHIP`. Read by the one routed permission check `is_relay_member`,
 * which is a primary-key probe.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    CREATE TABLE relay_members (
      community_id uuid        NOT NULL REFERENCES communities (id) ON DELETE CASCADE,
      pubkey       text        NOT NULL,
      role         text        NOT NULL DEFAULT 'member',
      added_by     text,
      created_at   timestamptz NOT NULL DEFAULT now(),
      CONSTRAINT relay_members_pkey PRIMARY KEY (community_id, pubkey),
      CONSTRAINT relay_members_pubkey_hex CHECK (pubkey ~ '^[0-9a-f]{64}$'),
      CONSTRAINT relay_members_role CHECK (role IN ('owner', 'admin', 'member'))
    )
  `.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`DROP TABLE relay_members`.execute(db);
}
