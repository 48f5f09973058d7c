import { Kysely, sql } from 'kysely';

/**
 * `event_tags`: NIP-01's tag index, one row per (event, single-letter tag name, value), kept in
 * page order (`event_created_at DESC, event_id`) per (community, name, value). A REQ page filtered
 * by such a tag walks the rows of its value newest first and looks each event up by primary key,
 * so a page of 20 reads about 20 rows however common or rare the value is. The GIN containment
 * form read the kind index in page order and tested every row's tags: with a tag on one row in
 * twenty, about 400 rows per page (docs/journal/06-session-6-tag-index-table.md).
 *
 * What is indexed (`isIndexedTagName` and `INDEXED_TAG_VALUE_MAX_BYTES` in
 * events/event-read.repository.ts say the same for the read side):
 * - tags whose element 0 is one ASCII letter other than `e` (event_refs holds those) and `h`
 *   (channel reads go through the channel column), and whose element 1 is a string of at most
 *   256 UTF-8 bytes (a btree entry has a size limit; a longer value is read through GIN);
 * - the row says exactly what NIP-01's positional match says: `tag[0] = name and tag[1] = value`.
 *
 * Kept by a statement-level trigger on `events` that reads the statement's new rows (a transition
 * table), not by the relay's write path: every row inserted into `events`, by the relay, a
 * backfill, a benchmark loader or psql, is in the index in the same transaction, as with a real
 * index. One set-based insert per statement, so a batch of 50 events costs one trigger call.
 * Rows inserted straight into a partition bypass it (nothing in the relay does that).
 *
 * Nothing here tracks deletion (migration 0019 does): reads check the joined `events` row, as for
 * event_refs. No foreign key: nothing may reference the partitioned `events`.
 *
 * Upgrading: the backfill copies the tags of every stored event while event writes go on (see
 * `up`); pods still on the previous version do not read the table and need nothing from it.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    CREATE TABLE event_tags (
      community_id     uuid        NOT NULL,
      name             text        NOT NULL,
      value            text        NOT NULL,
      event_created_at timestamptz NOT NULL,
      event_id         bytea       NOT NULL,
      event_kind       integer     NOT NULL,
      CONSTRAINT event_tags_value_size CHECK (octet_length(value) <= 256)
    )
  `.execute(db);
  // Not a primary key: a key cannot be declared DESC, and the walk needs
  // created_at DESC, id ASC in the index itself.
  await sql`
    CREATE UNIQUE INDEX event_tags_walk
      ON event_tags (community_id, name, value, event_created_at DESC, event_id) INCLUDE (event_kind)
  `.execute(db);
  await sql`
    CREATE FUNCTION events_index_tags() RETURNS trigger
    LANGUAGE plpgsql
    AS $index$
    BEGIN
      INSERT INTO event_tags (community_id, name, value, event_created_at, event_id, event_kind)
      ${indexedTagRows('new_rows', 'true')}
      ON CONFLICT DO NOTHING;
      RETURN NULL;
    END
    $index$
  `.execute(db);
  // The backfill runs before the trigger exists, so event writes go on meanwhile: CREATE TRIGGER
  // locks them out until the migrations commit. Events committed while it ran are then picked up
  // from the recent rows alone. Ingest refuses a created_at more than 900 s from its clock, so
  // everything it stored since the migrations' transaction began (`now()`) has a created_at
  // later than an hour before that.
  await copyStoredTags(db, 'true');
  await sql`
    CREATE TRIGGER events_index_tags
      AFTER INSERT ON events
      REFERENCING NEW TABLE AS new_rows
      FOR EACH STATEMENT EXECUTE FUNCTION events_index_tags()
  `.execute(db);
  await copyStoredTags(db, "n.created_at >= now() - interval '1 hour'");
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`DROP TRIGGER events_index_tags ON events`.execute(db);
  await sql`DROP FUNCTION events_index_tags()`.execute(db);
  await sql`DROP TABLE event_tags`.execute(db);
}

/** Adds the index rows of the stored events that pass `where` (over `events n`). */
async function copyStoredTags(db: Kysely<any>, where: string): Promise<void> {
  await sql`
    INSERT INTO event_tags (community_id, name, value, event_created_at, event_id, event_kind)
    ${indexedTagRows('events', where)}
    ON CONFLICT DO NOTHING
  `.execute(db);
}

/**
 * The index rows of the events in `source` (a relation with the `events` columns, aliased `n`)
 * that pass `where`. A pair an event carries twice gives two rows; the inserts' ON CONFLICT DO
 * NOTHING keeps one.
 */
export function indexedTagRows(source: string, where: string) {
  return sql.raw(`
      SELECT n.community_id, t.tag->>0, t.tag->>1, n.created_at, n.id, n.kind
        FROM ${source} n
       CROSS JOIN LATERAL jsonb_array_elements(n.tags) AS t(tag)
       WHERE jsonb_typeof(t.tag->0) = 'string'
         AND (t.tag->>0) ~ '^[A-Za-z]$'
         AND (t.tag->>0) NOT IN ('e', 'h')
         AND jsonb_typeof(t.tag->1) = 'string'
         AND octet_length(t.tag->>1) <= 256
         AND ${where}`);
}
