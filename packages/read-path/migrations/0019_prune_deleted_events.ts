import { Kysely, sql } from 'kysely';
import { referencedIdRows } from './0016_event_refs.js';
import { indexedTagRows } from './0018_event_tags.js';

/**
 * `event_tags` and `event_refs` forget deleted events. Deletion here is one-way: a NIP-09
 * deletion, a replaced version of a replaceable or addressable event, a group command's removal
 * or a deleted channel sets `events.deleted_at`, and nothing clears it. Until now the index rows of
 * such events stayed, and every read dropped them at its join with `events`:
 * - replaced versions pile up under the same tag values. The member list of a group (kind 39002)
 *   is signed again on every membership change, one `p` entry per member per version, so a `#p`
 *   page walked every old list before it found the live one;
 * - withdrawn reactions and deleted replies stay among a message's references, and an `#e` read
 *   looked each of them up.
 * Only the rows of the deleted event go: references *to* it stay (a deletion keeps pointing at its
 * target).
 *
 * A statement-level trigger reads the updated rows (a transition table, as the insert trigger of
 * 0018 does) and deletes the deleted rows' entries from both tables, each by its table's whole
 * key. An update that deletes nothing returns at once. Reads still check the joined row.
 *
 * Upgrading: the entries of events deleted before this migration are removed first, while event
 * writes go on. An event deleted after that pass and before the trigger exists keeps its entries;
 * reads skip them as before.
 */
export async function up(db: Kysely<any>): Promise<void> {
  // One pass over each table, joined to the deleted events by event: no tag expansion here.
  for (const table of ['event_tags', 'event_refs']) {
    await sql`
      DELETE FROM ${sql.table(table)} x USING events n
       WHERE n.deleted_at IS NOT NULL
         AND x.community_id = n.community_id AND x.event_created_at = n.created_at AND x.event_id = n.id
    `.execute(db);
  }
  // Per statement: the deleted rows' own entries, each by its table's whole key. The fences keep
  // the joins on the whole key: joined on the event alone, the planner may pair every entry of an
  // event with every one of its tags (quadratic in the tags of the event).
  await sql`
    CREATE FUNCTION events_prune_index_rows() RETURNS trigger
    LANGUAGE plpgsql
    AS $prune$
    BEGIN
      IF NOT EXISTS (SELECT 1 FROM new_rows WHERE deleted_at IS NOT NULL) THEN
        RETURN NULL;
      END IF;
      WITH d(community_id, name, value, event_created_at, event_id, event_kind) AS MATERIALIZED (
        ${indexedTagRows('new_rows', 'n.deleted_at IS NOT NULL')}
      )
      DELETE FROM event_tags tg USING d
       WHERE tg.community_id = d.community_id AND tg.name = d.name AND tg.value = d.value
         AND tg.event_created_at = d.event_created_at AND tg.event_id = d.event_id;
      WITH d(community_id, ref_id, event_created_at, event_id, event_kind) AS MATERIALIZED (
        ${referencedIdRows('new_rows')} AND n.deleted_at IS NOT NULL
      )
      DELETE FROM event_refs rf USING d
       WHERE rf.community_id = d.community_id AND rf.ref_id = d.ref_id
         AND rf.event_created_at = d.event_created_at AND rf.event_id = d.event_id;
      RETURN NULL;
    END
    $prune$
  `.execute(db);
  await sql`
    CREATE TRIGGER events_prune_index_rows
      AFTER UPDATE ON events
      REFERENCING NEW TABLE AS new_rows
      FOR EACH STATEMENT EXECUTE FUNCTION events_prune_index_rows()
  `.execute(db);
}

/** Entries of deleted events stay in the tables once this is undone; reads skip them. */
export async function down(db: Kysely<any>): Promise<void> {
  await sql`DROP TRIGGER events_prune_index_rows ON events`.execute(db);
  await sql`DROP FUNCTION events_prune_index_rows()`.execute(db);
}
