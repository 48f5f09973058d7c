import { Kysely, sql } from 'kysely';

/**
 * `events` (database.md §1.1): the table every routed history read pages over.
 *
 * - Partitioned BY RANGE (created_at), monthly; not per community. The primary key leads with
 *   `community_id` because every tenant read filters it first, and must contain `created_at`
 *   because a partitioned table's unique constraints must include the partition key.
 * - `search_tsv` is generated and stored, NULL for private kinds (gift wraps 1059, author-only
 *   30300, DM-visibility snapshots 30622: relay.md §2.7b). A generated column must be
 *   immutable, so the text-search configuration is the regconfig-cast literal, not a
 *   search_path-dependent name lookup.
 * - Bounds are written as explicit UTC instants: a bare date literal for a timestamptz bound
 *   would be read in the session TimeZone.
 * - No foreign key may reference `events` (partitions are created, split and dropped by
 *   the partition manager).
 */
const PARTITIONS: ReadonlyArray<readonly [name: string, from: string | null, to: string | null]> = [
  ['events_p_past', null, '2026-01-01'],
  ['events_p2026_01', '2026-01-01', '2026-02-01'],
  ['events_p2026_02', '2026-02-01', '2026-03-01'],
  ['events_p2026_03', '2026-03-01', '2026-04-01'],
  ['events_p2026_04', '2026-04-01', '2026-05-01'],
  ['events_p2026_05', '2026-05-01', '2026-06-01'],
  ['events_p2026_06', '2026-06-01', '2026-07-01'],
  ['events_p_future', '2026-07-01', null],
];

export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    CREATE TABLE events (
      community_id uuid        NOT NULL,
      id           bytea       NOT NULL,
      pubkey       bytea       NOT NULL,
      created_at   timestamptz NOT NULL,
      kind         integer     NOT NULL,
      tags         jsonb       NOT NULL,
      content      text        NOT NULL,
      search_tsv   tsvector GENERATED ALWAYS AS (
                     CASE WHEN kind IN (1059, 30300, 30622) THEN NULL
                          ELSE to_tsvector('simple'::regconfig, content)
                     END
                   ) STORED,
      sig          bytea       NOT NULL,
      received_at  timestamptz NOT NULL DEFAULT now(),
      channel_id   uuid,
      deleted_at   timestamptz,
      d_tag        text,
      not_before   bigint,
      delivered_at bigint,
      CONSTRAINT events_pkey PRIMARY KEY (community_id, created_at, id),
      CONSTRAINT events_community_id_fkey FOREIGN KEY (community_id) REFERENCES communities (id),
      CONSTRAINT events_id_length CHECK (octet_length(id) = 32),
      CONSTRAINT events_pubkey_length CHECK (octet_length(pubkey) = 32),
      CONSTRAINT events_sig_length CHECK (octet_length(sig) = 64),
      CONSTRAINT events_kind_range CHECK (kind BETWEEN 0 AND 65535),
      CONSTRAINT events_tags_array CHECK (jsonb_typeof(tags) = 'array'),
      -- relay.md §5.2 step 13: D_TAG_MAX_LEN keeps idx_events_parameterized entries small.
      CONSTRAINT events_d_tag_length CHECK (octet_length(d_tag) <= 1024)
    ) PARTITION BY RANGE (created_at)
  `.execute(db);

  for (const [name, from, to] of PARTITIONS) {
    await sql`
      CREATE TABLE ${sql.id(name)} PARTITION OF events
        FOR VALUES FROM (${bound(from, 'MINVALUE')}) TO (${bound(to, 'MAXVALUE')})
    `.execute(db);
  }
}

export async function down(db: Kysely<any>): Promise<void> {
  // Drops every partition, including ones the partition manager created later.
  await sql`DROP TABLE events`.execute(db);
}

function bound(date: string | null, open: 'MINVALUE' | 'MAXVALUE') {
  return date === null ? sql.raw(open) : sql.lit(`${date} 00:00:00+00`);
}
