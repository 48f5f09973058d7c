import { Kysely, sql } from 'kysely';

/**
 * `channel_invites` (NIP-29 kind 9009, docs/moderation.md "NIP-29 groups"): the invite codes a
 * channel admin minted. A kind 9021 join carrying a matching `code` admits its author to a
 * private channel and spends the code: each code admits one person, once, until `expires_at`.
 * Written in the transaction that stores the 9009 (and the 9021 that spends it); dropped with
 * the channel.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    CREATE TABLE channel_invites (
      community_id uuid        NOT NULL,
      channel_id   uuid        NOT NULL,
      code         text        NOT NULL,
      created_by   text        NOT NULL,
      event_id     bytea       NOT NULL,
      created_at   timestamptz NOT NULL DEFAULT now(),
      expires_at   timestamptz NOT NULL,
      used_by      text,
      used_at      timestamptz,
      CONSTRAINT channel_invites_pkey PRIMARY KEY (community_id, channel_id, code),
      CONSTRAINT channel_invites_channel_fkey FOREIGN KEY (community_id, channel_id)
        REFERENCES channels (community_id, id) ON DELETE CASCADE,
      CONSTRAINT channel_invites_code_length CHECK (char_length(code) BETWEEN 1 AND 128),
      CONSTRAINT channel_invites_used CHECK ((used_by IS NULL) = (used_at IS NULL))
    )
  `.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`DROP TABLE channel_invites`.execute(db);
}
