import { Kysely, sql } from 'kysely';

/**
 * `event_refs`: which event ids each event's `e` tags reference, kept at ingest in the same
 * transaction as the event row (as `event_mentions` is for `p`), so e-tag reads look ids up in
 * a btree instead of probing the GIN tags index. Every GIN lookup also scans that index's
 * pending list: with a full (dirty) list, a 188-id aux hop took seconds (seed 002 benchmark,
 * docs/journal/09-long-threads.md).
 *
 * Rows mirror the `tags @> '[["e","<id>"]]'` containment the GIN form evaluates, not NIP-01's
 * positional form, so the table answers exactly what that form answers for lowercase 64-hex ids:
 * for every tag array that holds the string "e" at any position, each of its string elements
 * that is 64 lowercase hex is a reference. Positional filters re-check `tags` after the join.
 *
 * Nothing here tracks deletion (migration 0019 does): soft deletes, NIP-09 and replaceable
 * supersession set `events.deleted_at`, which every read checks on the joined `events` row.
 * `created_at` of an event never changes, so (community_id, event_created_at, event_id) is the
 * events primary key and the join prunes partitions. No foreign key: nothing may reference the
 * partitioned `events`.
 *
 * The backfill covers the rows committed before it. During a rolling upgrade, a pod still on the
 * previous version writes events without their references; `fillEventRefs` is idempotent, so
 * running it once more after the last old pod is gone closes that gap.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    CREATE TABLE event_refs (
      community_id     uuid        NOT NULL,
      ref_id           bytea       NOT NULL,
      event_created_at timestamptz NOT NULL,
      event_id         bytea       NOT NULL,
      event_kind       integer     NOT NULL,
      CONSTRAINT event_refs_pkey PRIMARY KEY (community_id, ref_id, event_created_at, event_id) INCLUDE (event_kind),
      CONSTRAINT event_refs_ref_id_length CHECK (octet_length(ref_id) = 32)
    )
  `.execute(db);
  await fillEventRefs(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`DROP TABLE event_refs`.execute(db);
}

/**
 * The references of existing live `events` rows (of one community, or all), derived in SQL with
 * the same rule ingest applies in TypeScript. Deleted rows get none: migration 0019 removes those
 * of an event when it is deleted. Used by this migration's backfill and by the long-thread
 * benchmark, which loads its background rows with plain SQL.
 */
export async function fillEventRefs(db: Kysely<any>, communityId?: string): Promise<number> {
  const only = communityId === undefined ? sql`true` : sql`n.community_id = ${communityId}::uuid`;
  const res = await sql`
    INSERT INTO event_refs (community_id, ref_id, event_created_at, event_id, event_kind)
    ${referencedIdRows('events')} AND n.deleted_at IS NULL AND ${only}
    ON CONFLICT DO NOTHING
  `.execute(db);
  return Number(res.numAffectedRows ?? 0);
}

/**
 * The reference rows of the events in `source` (a relation with the `events` columns, aliased
 * `n`), one per distinct (event, referenced id), in event_refs' column order. It ends in a WHERE
 * clause, so a caller may add `AND …`.
 */
export function referencedIdRows(source: string) {
  return sql.raw(`
    SELECT DISTINCT n.community_id, decode(v.ref #>> '{}', 'hex'), n.created_at, n.id, n.kind
      FROM ${source} n
     CROSS JOIN LATERAL jsonb_array_elements(n.tags) AS t(tag)
     CROSS JOIN LATERAL jsonb_array_elements(CASE WHEN jsonb_typeof(t.tag) = 'array' THEN t.tag ELSE '[]' END) AS v(ref)
     WHERE t.tag @> '["e"]'
       AND jsonb_typeof(v.ref) = 'string'
       AND (v.ref #>> '{}') ~ '^[0-9a-f]{64}$'`);
}
