import { Kysely, sql } from 'kysely';

/**
 * Channels (NIP-29 groups addressed by the UUID in the `h` tag) and channel membership
 * (relay.md §1.1, §5.2 steps 9–12). Channel ids are client-chosen in a kind 9007 create, so the
 * default only serves relay-created channels (DMs) and tests. Deletion and archival are soft.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    CREATE TABLE channels (
      community_id uuid        NOT NULL REFERENCES communities (id) ON DELETE CASCADE,
      id           uuid        NOT NULL DEFAULT gen_random_uuid(),
      name         text        NOT NULL,
      about        text,
      visibility   text        NOT NULL DEFAULT 'open',
      channel_type text        NOT NULL DEFAULT 'stream',
      created_by   text,
      created_at   timestamptz NOT NULL DEFAULT now(),
      archived_at  timestamptz,
      deleted_at   timestamptz,
      CONSTRAINT channels_pkey PRIMARY KEY (community_id, id),
      CONSTRAINT channels_visibility CHECK (visibility IN ('open', 'private')),
      CONSTRAINT channels_channel_type CHECK (channel_type IN ('stream', 'forum', 'dm', 'workflow'))
    )
  `.execute(db);
  // The accessible-channel set starts from every live open channel of the community.
  await sql`
    CREATE INDEX idx_channels_community_visibility
      ON channels (community_id, visibility)
      WHERE deleted_at IS NULL
  `.execute(db);

  await sql`
    CREATE TABLE channel_members (
      community_id uuid        NOT NULL,
      channel_id   uuid        NOT NULL,
      pubkey       text        NOT NULL,
      role         text        NOT NULL DEFAULT 'member',
      joined_at    timestamptz NOT NULL DEFAULT now(),
      removed_at   timestamptz,
      CONSTRAINT channel_members_pkey PRIMARY KEY (community_id, channel_id, pubkey),
      CONSTRAINT channel_members_channel_fkey FOREIGN KEY (community_id, channel_id)
        REFERENCES channels (community_id, id) ON DELETE CASCADE,
      CONSTRAINT channel_members_pubkey_hex CHECK (pubkey ~ '^[0-9a-f]{64}$'),
      CONSTRAINT channel_members_role CHECK (role IN ('owner', 'admin', 'member', 'guest', 'bot'))
    )
  `.execute(db);
  // "Which channels is this pubkey a current member of" (accessible set, fan-out caches).
  await sql`
    CREATE INDEX idx_channel_members_pubkey
      ON channel_members (community_id, pubkey, channel_id)
      WHERE removed_at IS NULL
  `.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`DROP TABLE channel_members`.execute(db);
  await sql`DROP TABLE channels`.execute(db);
}
