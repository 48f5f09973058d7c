import { Kysely, sql } from 'kysely';

/**
 * `delivery_log`: which recipient pubkey an event was delivered to. Partitioned exactly like
 * `events` (same bounds and naming), because the partition manager maintains both tables
 * (database.md §1.1). Kept minimal; no foreign keys, so high-volume writes never lock the
 * community row.
 */
const PARTITIONS: ReadonlyArray<readonly [name: string, from: string | null, to: string | null]> = [
  ['delivery_log_p_past', null, '2026-01-01'],
  ['delivery_log_p2026_01', '2026-01-01', '2026-02-01'],
  ['delivery_log_p2026_02', '2026-02-01', '2026-03-01'],
  ['delivery_log_p2026_03', '2026-03-01', '2026-04-01'],
  ['delivery_log_p2026_04', '2026-04-01', '2026-05-01'],
  ['delivery_log_p2026_05', '2026-05-01', '2026-06-01'],
  ['delivery_log_p2026_06', '2026-06-01', '2026-07-01'],
  ['delivery_log_p_future', '2026-07-01', null],
];

export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    CREATE TABLE delivery_log (
      community_id uuid        NOT NULL,
      event_id     bytea       NOT NULL,
      created_at   timestamptz NOT NULL,
      pubkey_hex   text        NOT NULL,
      delivered_at timestamptz NOT NULL DEFAULT now(),
      CONSTRAINT delivery_log_pkey PRIMARY KEY (community_id, created_at, event_id, pubkey_hex),
      CONSTRAINT delivery_log_pubkey_hex CHECK (pubkey_hex ~ '^[0-9a-f]{64}$')
    ) PARTITION BY RANGE (created_at)
  `.execute(db);

  for (const [name, from, to] of PARTITIONS) {
    await sql`
      CREATE TABLE ${sql.id(name)} PARTITION OF delivery_log
        FOR VALUES FROM (${bound(from, 'MINVALUE')}) TO (${bound(to, 'MAXVALUE')})
    `.execute(db);
  }
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`DROP TABLE delivery_log`.execute(db);
}

function bound(date: string | null, open: 'MINVALUE' | 'MAXVALUE') {
  return date === null ? sql.raw(open) : sql.lit(`${date} 00:00:00+00`);
}
