/**
 * SQL of the NIP-CW thread window (relay.md §3.6b, database.md §2.8): the root lookup its
 * authorization needs, one page of replies walking older, and one page of the aux closure.
 * Methods take the handle to run on; the service decides writer or proved replica and wraps
 * each statement in the window's transaction-local deadline.
 */
import { Injectable } from '@nestjs/common';
import { Kysely, RawBuilder, sql } from 'kysely';
import { NostrEvent } from '../nostr/nostr.types.js';
import { DB } from '@buzz-relay/read-path';
import { isEventRefId, referencingCtes } from '../events/event-read.queries.js';
import { EVENT_COLUMNS, scopeSql } from '../events/event-sql.js';
import { ReadScope } from '../channels/read-scope.js';
import { EventRow, rowToEvent } from '../events/stored-event.js';
import { visibilitySql } from '../events/visibility.js';

export interface WindowCursor {
  readonly createdAt: number;
  readonly id: string;
}

export interface ThreadWindowQuery {
  readonly channelId: string;
  readonly rootId: string;
  readonly depthLimit: number;
  readonly kinds: readonly number[] | undefined;
  readonly cursor: WindowCursor | undefined;
  /** Rows wanted; one more is read to learn has_more. */
  readonly limit: number;
  /** Whose visibility rules apply (events/visibility.ts). */
  readonly reader: string;
}

/** Rows plus what they cost the request's scan budget (content + tags bytes). */
export interface ScannedRows {
  readonly rows: NostrEvent[];
  readonly bytes: number;
}

type SizedRow = EventRow & { bytes: string | number };

@Injectable()
export class ThreadWindowRepository {
  /** The channel of each root that exists in the community (deleted roots included: their replies stay readable). */
  async rootChannels(db: Kysely<DB>, communityId: string, rootIds: readonly string[]): Promise<Map<string, string>> {
    const { rows } = await sql<{ id: Buffer; channel_id: string }>`
      select id, channel_id from events
       where community_id = ${communityId}::uuid and id = any(${rootIds.map((r) => Buffer.from(r, 'hex'))}::bytea[])
         and channel_id is not null`.execute(db);
    return new Map(rows.map((r) => [r.id.toString('hex'), r.channel_id]));
  }

  /** Whether the root is present in the channel on this handle's snapshot (a lagging replica may miss it). */
  async rootPresent(db: Kysely<DB>, communityId: string, channelId: string, rootId: string): Promise<boolean> {
    const { rows } = await sql<{ present: boolean }>`
      select exists (select 1 from events
                      where community_id = ${communityId}::uuid and id = decode(${rootId}, 'hex')
                        and channel_id = ${channelId}::uuid) as present`.execute(db);
    return rows[0]?.present === true;
  }

  /**
   * Replies of depth 1..depthLimit under the root, newest first (`created_at DESC, id ASC`),
   * strictly older than the cursor, limit + 1 rows. Driven from thread_metadata pinned to the
   * channel: the page is provably channel-bearing (the covered arm's proof).
   *
   * The event row is a LATERAL primary-key probe with `limit 1` (it is unique anyway) so the
   * planner cannot flatten it into a hash join over the community's events: the walk goes down
   * the root's (created_at, id) index, sorts only within a second, and stops at the limit, however
   * long the thread. A plain join flips to scanning every event of the partition as the table
   * grows (test/database/thread-window-plan.test.ts).
   */
  async page(db: Kysely<DB>, communityId: string, q: ThreadWindowQuery): Promise<ScannedRows> {
    const kinds = q.kinds ? sql`and e.kind = any(${q.kinds as number[]}::int[])` : sql``;
    const older = q.cursor
      ? sql`and (t.event_created_at < to_timestamp(${q.cursor.createdAt})
                 or (t.event_created_at = to_timestamp(${q.cursor.createdAt}) and t.event_id > decode(${q.cursor.id}, 'hex')))`
      : sql``;
    const { rows } = await sql<SizedRow>`
      select ${EVENT_COLUMNS}, octet_length(e.content) + octet_length(e.tags::text) as bytes
        from thread_metadata t
        cross join lateral (
          select e.id, e.pubkey, e.created_at, e.kind, e.tags, e.content, e.sig from events e
           where e.community_id = t.community_id and e.created_at = t.event_created_at and e.id = t.event_id
             and e.deleted_at is null ${kinds} ${visibilitySql(q.reader, q.kinds)}
           limit 1) e
       where t.community_id = ${communityId}::uuid and t.channel_id = ${q.channelId}::uuid
         and t.root_event_id = decode(${q.rootId}, 'hex') and t.depth between 1 and ${q.depthLimit} ${older}
       order by t.event_created_at desc, t.event_id asc
       limit ${q.limit + 1}`.execute(db);
    return sized(rows);
  }

  /**
   * One aux page: live events of `kinds` whose `e` tags reference any of `targetIds` (at most a
   * batch), after the (created_at, id) keyset, `pageSize` + 1 rows (the extra one says another
   * page follows). Candidates come from `event_refs` (one btree probe per target, then one
   * primary-key probe per candidate; see referencingCtes), fenced in MATERIALIZED CTEs with the
   * order and limit outside, so neither a backward primary-key walk (seed 002) nor a GIN lookup
   * that scans a long pending list can make the window slow. Targets the table cannot hold
   * (anything but lowercase 64-hex) keep the seed's GIN form.
   */
  async auxPage(db: Kysely<DB>, scope: ReadScope, targetIds: readonly string[], kinds: readonly number[], after: WindowCursor | undefined, pageSize: number): Promise<ScannedRows> {
    const keyset = (at: RawBuilder<unknown>, id: RawBuilder<unknown>) =>
      after ? sql`and (${at} > to_timestamp(${after.createdAt}) or (${at} = to_timestamp(${after.createdAt}) and ${id} > decode(${after.id}, 'hex')))` : sql``;
    const live = sql`e.deleted_at is null and ${scopeSql(scope)} ${visibilitySql(scope.reader, kinds)}`;
    const matches = targetIds.every((id) => isEventRefId(id))
      ? referencingCtes(scope.communityId, targetIds.map((id) => Buffer.from(id, 'hex')), kinds, live, keyset(sql.ref('rf.event_created_at'), sql.ref('rf.event_id')))
      : sql`m as materialized (
          select e.id, e.pubkey, e.created_at, e.kind, e.tags, e.content, e.sig from events e
           where e.community_id = ${scope.communityId}::uuid and ${live}
             and e.kind = any(${kinds as number[]}::int[])
             and e.tags @> any(${targetIds.map((id) => JSON.stringify([['e', id]]))}::jsonb[])
             ${keyset(sql.ref('e.created_at'), sql.ref('e.id'))}
        )`;
    const { rows } = await sql<SizedRow>`
      with ${matches}
      select ${EVENT_COLUMNS},
             octet_length(e.content) + octet_length(e.tags::text) as bytes
        from m e order by e.created_at asc, e.id asc
       limit ${pageSize + 1}`.execute(db);
    return sized(rows);
  }
}

function sized(rows: SizedRow[]): ScannedRows {
  return { rows: rows.map(rowToEvent), bytes: rows.reduce((n, r) => n + Number(r.bytes), 0) };
}
