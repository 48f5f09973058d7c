/**
 * Database-level constants shared by the writer pool, the replica fence and the migrations.
 * database.md §1.6 (floor guard), §1.7 (replica-floor advisory lock), §4.3 (fence wall).
 */

/**
 * Seconds below `clock_timestamp()` under which the commit-time floor guard rejects a
 * channel-bearing `events` row. The writer pool arms every connection with
 * `SET buzz.created_at_floor = '960'` (database.md §2.1), i.e. the 900 s ingest skew plus 60 s.
 */
export const CREATED_AT_FLOOR_SECS = 960;

/** Name of the session GUC the floor guard reads (`current_setting(..., true)`). */
export const CREATED_AT_FLOOR_GUC = 'buzz.created_at_floor';

/** Extra margin subtracted from the fence wall: `wall = min(oldest, S) − floor − margin`. */
export const FENCE_CLOCK_MARGIN_SECS = 5;

/**
 * Deployment-global, transaction-scoped advisory lock key: ASCII "buzzflor" read as a big-endian
 * int64 (0x62757a7a666c6f72). The top bit is clear, so the value fits a signed `bigint` as is.
 * Channel-event writers take it shared (`pg_advisory_xact_lock_shared`), the probe exclusive
 * (`pg_advisory_xact_lock`).
 *
 * node-postgres sends a JS bigint parameter as its decimal text, so either form can be bound;
 * cast it in SQL (`pg_advisory_xact_lock(${key}::bigint)`) so the (int, int) overload is never
 * considered.
 */
export const REPLICA_FLOOR_LOCK_KEY = 0x62757a7a666c6f72n;

/** {@link REPLICA_FLOOR_LOCK_KEY} as decimal text (what Postgres reports in `pg_locks`). */
export const REPLICA_FLOOR_LOCK_KEY_TEXT = '7094711454115065714';

/**
 * Transaction-scoped advisory lock that serialises partition DDL across pods running
 * `ensureFuturePartitions` at the same time: ASCII "buzzpart" (0x62757a7a70617274).
 */
export const PARTITION_MANAGER_LOCK_KEY = 0x62757a7a70617274n;
