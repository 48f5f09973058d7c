import { Kysely, sql } from 'kysely';

/**
 * Commit-time `created_at` floor guard (database.md §1.6): the writer-side half of the replica
 * fence. A channel-bearing `events` row may not commit with `created_at` older than
 * `clock_timestamp() − buzz.created_at_floor` seconds. The writer pool arms every connection
 * with the GUC (960); a session without it (or with a blank value) is inert, which is how
 * backfills run (with the fence held closed; there is no in-band bypass).
 *
 * - Deferred constraint trigger: it runs inside COMMIT and compares against
 *   `clock_timestamp()`, not `now()`, so holding a transaction open cannot outrun it.
 * - `INSERT OR UPDATE OF created_at, channel_id`: the UPDATE arm stops moving an old
 *   channel-NULL row into a channel and rewriting `created_at` downward. A cross-partition
 *   UPDATE becomes DELETE + INSERT and is caught by the INSERT arm on the destination.
 * - Created on the partitioned parent, so it is cloned onto every partition, present and future.
 * - Channel-NULL rows are exempt: they never appear in keyset channel windows.
 * - A malformed GUC value fails closed (it raises instead of silently disarming the guard).
 *
 * The fence probe verifies this exact shape before it starts (database.md §4.1): keep the
 * function and trigger names stable.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    CREATE FUNCTION events_created_at_floor_guard() RETURNS trigger
    LANGUAGE plpgsql
    AS $guard$
    DECLARE
      floor_setting text := btrim(coalesce(current_setting('buzz.created_at_floor', true), ''));
      floor_secs    numeric;
    BEGIN
      IF floor_setting = '' OR NEW.channel_id IS NULL THEN
        RETURN NULL;
      END IF;
      -- Validated with a pattern rather than an exception block: a plpgsql EXCEPTION clause
      -- would open a subtransaction for every row at every commit.
      IF floor_setting !~ '^[+-]?[0-9]+(\\.[0-9]+)?$' THEN
        RAISE EXCEPTION 'buzz.created_at_floor must be a number of seconds, got "%"', floor_setting
          USING ERRCODE = 'invalid_parameter_value';
      END IF;
      floor_secs := floor_setting::numeric;
      IF floor_secs > 0
         AND NEW.created_at < clock_timestamp() - floor_secs * interval '1 second' THEN
        RAISE EXCEPTION
          'event created_at % is below the replica-fence floor (% s before commit time)',
          NEW.created_at, floor_secs
          USING ERRCODE = 'check_violation',
                HINT = 'backfill on a connection without buzz.created_at_floor, with the replica fence closed';
      END IF;
      RETURN NULL;
    END
    $guard$
  `.execute(db);

  await sql`
    CREATE CONSTRAINT TRIGGER events_created_at_floor
      AFTER INSERT OR UPDATE OF created_at, channel_id ON events
      DEFERRABLE INITIALLY DEFERRED
      FOR EACH ROW
      EXECUTE FUNCTION events_created_at_floor_guard()
  `.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`DROP TRIGGER events_created_at_floor ON events`.execute(db);
  await sql`DROP FUNCTION events_created_at_floor_guard()`.execute(db);
}
