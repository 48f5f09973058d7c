import { Kysely, sql } from 'kysely';

/**
 * Every change to `bans` is announced on the `buzz_bans` channel, so each pod can keep the ban
 * state of its readers in memory and end a banned key's sockets at once (issue 17: REQ and COUNT
 * admission no longer read `bans` on every request; the listener is
 * src/moderation/ban-notify-listener.service.ts).
 * - A row inserted, updated or deleted sends `<community_id>:<pubkey>` (an update that moves a
 *   row sends its old key too). NOTIFY is transactional: listeners hear it at the commit.
 * - TRUNCATE sends `*`: forget everything.
 * A cascade delete from `communities` fires the row trigger as well.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    CREATE FUNCTION bans_notify() RETURNS trigger
    LANGUAGE plpgsql
    AS $notify$
    BEGIN
      IF TG_OP = 'TRUNCATE' THEN
        PERFORM pg_notify('buzz_bans', '*');
        RETURN NULL;
      END IF;
      IF TG_OP IN ('UPDATE', 'DELETE') THEN
        PERFORM pg_notify('buzz_bans', OLD.community_id::text || ':' || OLD.pubkey);
      END IF;
      IF TG_OP IN ('INSERT', 'UPDATE') THEN
        PERFORM pg_notify('buzz_bans', NEW.community_id::text || ':' || NEW.pubkey);
      END IF;
      RETURN NULL;
    END
    $notify$
  `.execute(db);
  await sql`CREATE TRIGGER bans_notify AFTER INSERT OR UPDATE OR DELETE ON bans FOR EACH ROW EXECUTE FUNCTION bans_notify()`.execute(db);
  await sql`CREATE TRIGGER bans_notify_truncate AFTER TRUNCATE ON bans FOR EACH STATEMENT EXECUTE FUNCTION bans_notify()`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`DROP TRIGGER bans_notify_truncate ON bans`.execute(db);
  await sql`DROP TRIGGER bans_notify ON bans`.execute(db);
  await sql`DROP FUNCTION bans_notify()`.execute(db);
}
