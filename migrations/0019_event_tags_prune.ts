import { Kysely, sql } from 'kysely';
import { indexedTagRows } from './0018_event_tags.js';

/**
 * `event_tags` forgets deleted events. Deletion here is one-way: a NIP-09 deletion, a replaced
 * version of a replaceable or addressable event, a moderation removal or a deleted channel sets
 * `events.deleted_at`, and nothing clears it. Until now the index rows of such events stayed, and a
 * tag walk read them and dropped them at the join. Replaced versions pile up under the same values:
 * the member list of a group (kind 39002), signed again on every membership change, kept one `p`
 * entry per member per version, so a `#p` page walked every old list before it found the live one.
 *
 * A statement-level trigger reads the updated rows (a transition table, as the insert trigger of
 * 0018 does) and deletes the index rows of those that are deleted, by the index's own key. Any
 * update that leaves `deleted_at` null deletes nothing. Reads still check the joined row.
 *
 * Upgrading: the index rows of events deleted before this migration are removed first, while
 * event writes go on. An event deleted after that pass and before the trigger exists keeps its
 * rows; reads skip them as before.
 */
export async function up(db: Kysely<any>): Promise<void> {
  // One pass over the table, joined to the deleted events by event: no tag expansion here.
  await sql`
    DELETE FROM event_tags tg USING events n
     WHERE n.deleted_at IS NOT NULL
       AND tg.community_id = n.community_id AND tg.event_created_at = n.created_at AND tg.event_id = n.id
  `.execute(db);
  // Per statement: the deleted rows' own entries, each by the whole key of event_tags_walk. The
  // fence keeps the join on all five columns: joined on the event alone, the planner may pair
  // every entry of an event with every one of its tags (quadratic in the tags of the event).
  await sql`
    CREATE FUNCTION events_prune_tags() RETURNS trigger
    LANGUAGE plpgsql
    AS $prune$
    BEGIN
      WITH d(community_id, name, value, event_created_at, event_id, event_kind) AS MATERIALIZED (
        ${indexedTagRows('new_rows', 'n.deleted_at IS NOT NULL')}
      )
      DELETE FROM event_tags tg USING d
       WHERE tg.community_id = d.community_id AND tg.name = d.name AND tg.value = d.value
         AND tg.event_created_at = d.event_created_at AND tg.event_id = d.event_id;
      RETURN NULL;
    END
    $prune$
  `.execute(db);
  await sql`
    CREATE TRIGGER events_prune_tags
      AFTER UPDATE ON events
      REFERENCING NEW TABLE AS new_rows
      FOR EACH STATEMENT EXECUTE FUNCTION events_prune_tags()
  `.execute(db);
}

/** Rows of deleted events stay in the table once this is undone; reads skip them. */
export async function down(db: Kysely<any>): Promise<void> {
  await sql`DROP TRIGGER events_prune_tags ON events`.execute(db);
  await sql`DROP FUNCTION events_prune_tags()`.execute(db);
}
