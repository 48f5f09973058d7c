import { Kysely, sql } from 'kysely';

/**
 * Community restriction state (relay.md §2.5 steps 2–3, §5.2 step 8): bans, timeouts and the
 * optional NIP-42 pubkey allowlist. All three are writer-only, primary-key reads.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    CREATE TABLE bans (
      community_id uuid        NOT NULL REFERENCES communities (id) ON DELETE CASCADE,
      pubkey       text        NOT NULL,
      reason       text,
      banned_by    text,
      created_at   timestamptz NOT NULL DEFAULT now(),
      expires_at   timestamptz,
      CONSTRAINT bans_pkey PRIMARY KEY (community_id, pubkey),
      CONSTRAINT bans_pubkey_hex CHECK (pubkey ~ '^[0-9a-f]{64}$')
    )
  `.execute(db);

  await sql`
    CREATE TABLE timeouts (
      community_id uuid        NOT NULL REFERENCES communities (id) ON DELETE CASCADE,
      pubkey       text        NOT NULL,
      reason       text,
      timed_out_by text,
      created_at   timestamptz NOT NULL DEFAULT now(),
      until        timestamptz NOT NULL,
      CONSTRAINT timeouts_pkey PRIMARY KEY (community_id, pubkey),
      CONSTRAINT timeouts_pubkey_hex CHECK (pubkey ~ '^[0-9a-f]{64}$')
    )
  `.execute(db);

  await sql`
    CREATE TABLE pubkey_allowlist (
      community_id uuid        NOT NULL REFERENCES communities (id) ON DELETE CASCADE,
      pubkey       text        NOT NULL,
      added_by     text,
      created_at   timestamptz NOT NULL DEFAULT now(),
      CONSTRAINT pubkey_allowlist_pkey PRIMARY KEY (community_id, pubkey),
      CONSTRAINT pubkey_allowlist_pubkey_hex CHECK (pubkey ~ '^[0-9a-f]{64}$')
    )
  `.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`DROP TABLE pubkey_allowlist`.execute(db);
  await sql`DROP TABLE timeouts`.execute(db);
  await sql`DROP TABLE bans`.execute(db);
}
