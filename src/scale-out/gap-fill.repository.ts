/**
 * The writer reads behind the gap fill (CrossPodFanout): events stored in some
 * communities since a moment, in acceptance order, a page at a time. Read from
 * the writer, not a replica, because the point is to catch up on what the pod
 * could not hear live; a lagging replica would hide exactly those rows.
 *
 * `received_at` (default now()) orders and bounds the pages; `created_at` is
 * bounded as well so that only the partitions that can hold such rows are
 * scanned (ingest keeps `created_at` within ±CREATED_AT_SKEW_SECS of the server
 * clock). Deleted rows are not replayed.
 */
import { Injectable } from '@nestjs/common';
import { RawBuilder, sql } from 'kysely';
import { NostrEvent } from '../nostr/nostr.types.js';
import { DatabaseService } from '@buzz-relay/read-path';
import { EVENT_COLUMNS, pageBound } from '../events/event-sql.js';
import { EventRow, rowToEvent } from '../events/stored-event.js';
import { isCanonicalUuid } from '../nostr/group-id.js';

/** Ingest's bound on |created_at − server clock|. */
export const CREATED_AT_SKEW_SECS = 900;

export interface GapRow {
  readonly communityId: string;
  readonly channelId: string | null;
  readonly event: NostrEvent;
}

/** Where the next page starts: after this row in (received_at, id) order. */
export interface GapCursor {
  readonly receivedAt: string;
  readonly id: Buffer;
}

export interface GapPage {
  readonly rows: GapRow[];
  readonly next: GapCursor | undefined;
}

interface GapDbRow extends EventRow {
  community_id: string;
  channel_id: string | null;
  received_key: string;
}

@Injectable()
export class GapFillRepository {
  constructor(private readonly db: DatabaseService) {}

  /** One page of rows received at or after `sinceMs`, after `cursor`; `next` is undefined on the last page. */
  async page(communityIds: readonly string[], sinceMs: number, cursor: GapCursor | undefined, limit: number): Promise<GapPage> {
    const where = gapWhere(communityIds, sinceMs, cursor);
    if (!where || limit <= 0) return { rows: [], next: undefined };
    // A history read the relay replays to its own subscribers, on the writer (relay.md §2.8).
    const { rows } = await this.db.withWriter('subscription_history', (db) =>
      sql<GapDbRow>`
      select ${EVENT_COLUMNS}, e.community_id, e.channel_id, e.received_at::text as received_key
        from events e where ${where}
       order by e.received_at, e.id
       limit ${pageBound(limit)}`.execute(db),
    );
    const last = rows.at(-1);
    return {
      rows: rows.map((r) => ({ communityId: r.community_id, channelId: r.channel_id, event: rowToEvent(r) })),
      next: last && rows.length === limit ? { receivedAt: last.received_key, id: Buffer.from(last.id, 'hex') } : undefined,
    };
  }

  /** How many rows after `cursor` a capped fill left out, counted up to `max`. */
  async remaining(communityIds: readonly string[], sinceMs: number, cursor: GapCursor, max: number): Promise<number> {
    const where = gapWhere(communityIds, sinceMs, cursor);
    if (!where) return 0;
    const { rows } = await this.db.withWriter('subscription_history', (db) =>
      sql<{ n: string }>`select count(*) as n from (select 1 from events e where ${where} limit ${pageBound(max)}) s`.execute(db),
    );
    return Number(rows[0]?.n ?? 0);
  }
}

function gapWhere(communityIds: readonly string[], sinceMs: number, cursor: GapCursor | undefined): RawBuilder<boolean> | undefined {
  const ids = communityIds.filter((c) => isCanonicalUuid(c));
  if (ids.length === 0) return undefined;
  const after = cursor ? sql`and (e.received_at, e.id) > (${cursor.receivedAt}::timestamptz, ${cursor.id})` : sql``;
  return sql<boolean>`e.community_id = any(${ids}::uuid[])
     and e.created_at >= to_timestamp(${sinceMs / 1000 - CREATED_AT_SKEW_SECS})
     and e.created_at <= to_timestamp(${Date.now() / 1000 + CREATED_AT_SKEW_SECS})
     and e.received_at >= ${new Date(sinceMs).toISOString()}::timestamptz
     and e.deleted_at is null
     ${after}`;
}
