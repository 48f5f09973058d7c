import { Kysely, sql } from 'kysely';

/**
 * Tenancy (relay.md §1.1, §2.1 step 4): a community is selected only by the request Host, looked
 * up in `communities` and then in `community_host_aliases`. Hosts are stored exactly as the
 * normaliser produces them (lowercase, no trailing dot), so lookups are plain equality.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    CREATE TABLE communities (
      id          uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
      host        text        NOT NULL,
      name        text,
      -- relay.md §3.4: NIP-CW v2 community setting; replies count as channel-window rows.
      thread_replies_in_channel boolean NOT NULL DEFAULT false,
      archived_at timestamptz,
      created_at  timestamptz NOT NULL DEFAULT now(),
      CONSTRAINT communities_host_key UNIQUE (host),
      CONSTRAINT communities_host_normalised CHECK (
        host <> '' AND host = lower(btrim(host)) AND right(host, 1) <> '.'
      )
    )
  `.execute(db);

  await sql`
    CREATE TABLE community_host_aliases (
      host         text PRIMARY KEY,
      community_id uuid NOT NULL REFERENCES communities (id) ON DELETE CASCADE,
      CONSTRAINT community_host_aliases_host_normalised CHECK (
        host <> '' AND host = lower(btrim(host)) AND right(host, 1) <> '.'
      )
    )
  `.execute(db);

  // Supports the ON DELETE CASCADE lookup and "list a community's aliases".
  await sql`
    CREATE INDEX idx_community_host_aliases_community
      ON community_host_aliases (community_id)
  `.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`DROP TABLE community_host_aliases`.execute(db);
  await sql`DROP TABLE communities`.execute(db);
}
