/**
 * Divergent fixtures on a physical streaming pair. The replica cannot be written, so rows are
 * made writer-only by inserting them while WAL replay is paused, and replica-only by deleting
 * them on the writer while replay is paused. Fixture rows are written on plain sessions (no
 * floor GUC), the way backfills are.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { Kysely, sql } from 'kysely';
import { Pool } from 'pg';
import { DB } from '../../packages/read-path/src/database/database.types.js';

export async function newCommunity(admin: Pool): Promise<string> {
  const { rows } = await admin.query<{ id: string }>(`insert into communities (host) values ($1) returning id`, [
    `routing-${randomBytes(5).toString('hex')}.example`,
  ]);
  return rows[0].id;
}

export async function insertRow(
  admin: Pool,
  communityId: string,
  opts: { channelId?: string | null; createdAtSecs: number; content?: string; kind?: number },
): Promise<string> {
  const id = randomBytes(32);
  await admin.query(
    `insert into events (community_id, id, pubkey, created_at, kind, tags, content, sig, channel_id)
     values ($1, $2, $3, to_timestamp($4), $5, '[]', $6, $7, $8)`,
    [communityId, id, randomBytes(32), opts.createdAtSecs, opts.kind ?? 9, opts.content ?? '', randomBytes(64), opts.channelId ?? null],
  );
  return id.toString('hex');
}

/** Contents of a channel's rows at or below `untilSecs`, newest first (the page a cursor read serves). */
export async function channelPage(db: Kysely<DB>, communityId: string, channelId: string, untilSecs: number): Promise<string[]> {
  const { rows } = await sql<{ content: string }>`
    select content from events
     where community_id = ${communityId}::uuid and channel_id = ${channelId}::uuid and deleted_at is null
       and created_at <= to_timestamp(${untilSecs})
     order by created_at desc, id asc`.execute(db);
  return rows.map((r) => r.content);
}

export async function countRows(db: Kysely<DB>, communityId: string): Promise<number> {
  const { rows } = await sql<{ n: number }>`select count(*)::int as n from events where community_id = ${communityId}::uuid and deleted_at is null`.execute(db);
  return rows[0].n;
}

export { randomUUID };
