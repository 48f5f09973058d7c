/**
 * SQL of the bridge branches: channel window, aux closure, thread summaries,
 * feeds, thread replies and full-text search. Each method takes the Kysely
 * handle to run on, so the caller decides writer or routed reader.
 */
import { Injectable } from '@nestjs/common';
import { Kysely, RawBuilder, sql } from 'kysely';
import { NostrEvent } from '../nostr/nostr.types.js';
import { DB } from '@buzz-relay/read-path';
import { ReadScope } from '../channels/read-scope.js';
import { EVENT_COLUMNS, scopeSql } from '../events/event-sql.js';
import { isEventRefId, referencingCtes } from '../events/event-read.queries.js';
import { E_TAG_DEADLINE_MS, withStatementDeadline } from '@buzz-relay/read-path/internal';
import { EventRow, rowToEvent } from '../events/stored-event.js';
import { visibilitySql } from '../events/visibility.js';

export interface WindowQuery {
  readonly channelId: string;
  readonly limit: number;
  readonly kinds: readonly number[] | undefined;
  readonly cursor: { until: number; beforeId: string } | undefined;
  readonly repliesInChannel: boolean;
  /** Whose visibility rules apply (events/visibility.ts). */
  readonly reader: string;
}

@Injectable()
export class BridgeReadsRepository {
  /** One page of top-level channel rows (plus one sentinel row for has_more). */
  async channelWindow(db: Kysely<DB>, communityId: string, q: WindowQuery): Promise<NostrEvent[]> {
    const kinds = q.kinds ? sql`and e.kind = any(${q.kinds as number[]}::int[])` : sql``;
    const cursor = q.cursor
      ? sql`and (e.created_at < to_timestamp(${q.cursor.until}) or (e.created_at = to_timestamp(${q.cursor.until}) and e.id > decode(${q.cursor.beforeId}, 'hex')))`
      : sql``;
    const rowPredicate = q.repliesInChannel ? sql`true` : sql`(t.depth is null or t.depth = 0 or (t.depth = 1 and t.broadcast))`;
    const { rows } = await sql<EventRow>`
      select ${EVENT_COLUMNS}
        from events e
        left join thread_metadata t
          on t.community_id = e.community_id and t.event_created_at = e.created_at and t.event_id = e.id
       where e.community_id = ${communityId}::uuid and e.channel_id = ${q.channelId}::uuid and e.deleted_at is null
         ${kinds} ${cursor} and ${rowPredicate} ${visibilitySql(q.reader, q.kinds)}
       order by e.created_at desc, e.id asc
       limit ${q.limit + 1}`.execute(db);
    return rows.map(rowToEvent);
  }

  /**
   * Events of `kinds` whose `e`-bearing tags reference any of `targetIds`, in scope, drained
   * along the (created_at, id) keyset. Set-based (seed 002): the id set is one bound array, and
   * the filtered select is fenced in a MATERIALIZED CTE with ORDER/LIMIT outside, so the planner
   * cannot walk the primary key backwards hoping to stop early. The candidates come from
   * `event_refs` (one btree probe per id, then one primary-key probe per candidate), not from
   * the GIN tags index: every GIN lookup also scans the index's pending list, which took
   * seconds per hop at 188 ids once the list had filled (docs/journal/09-long-threads.md).
   * Ids the table cannot hold (anything but lowercase 64-hex) keep the seed's GIN form,
   * `tags @> any($::jsonb[])`, which answers the same containment. Each page runs under the
   * 20 s tighten-only deadline.
   */
  async referencing(db: Kysely<DB>, scope: ReadScope, targetIds: readonly string[], kinds: readonly number[], pageSize = 1000, maxPages = 64): Promise<NostrEvent[]> {
    if (targetIds.length === 0) return [];
    const out: NostrEvent[] = [];
    let after: { at: number; id: string } | undefined;
    for (let page = 0; page < maxPages; page++) {
      const matches = targetIds.every(isEventRefId) ? refMatches(scope, targetIds, kinds, after) : ginMatches(scope, targetIds, kinds, after);
      const rows = await withStatementDeadline(db, E_TAG_DEADLINE_MS, async (tx) => {
        const res = await sql<EventRow>`
          with ${matches}
          select ${EVENT_COLUMNS} from m e order by e.created_at asc, e.id asc
           limit ${pageSize}`.execute(tx);
        return res.rows;
      });
      out.push(...rows.map(rowToEvent));
      if (rows.length < pageSize) break;
      const last = out[out.length - 1];
      after = { at: last.created_at, id: last.id };
    }
    return out;
  }

  /**
   * Events that p-tag the reader, newest first; `unanswered` keeps those the reader has not replied
   * or reacted to since (a live event of theirs, no older than the mention, that `e`-tags it). The
   * answers are found through event_refs, which holds exactly what `tags @> [["e", <id>]]` matches
   * for a hex id: a primary-key range per mention. The containment form was planned as a test of
   * the reader's events once per mention (docs/journal/08-session-8-faster-vm.md).
   */
  async mentions(db: Kysely<DB>, scope: ReadScope, reader: string, since: number | undefined, limit: number, unanswered: boolean): Promise<NostrEvent[]> {
    const sinceSql = since !== undefined ? sql`and m.event_created_at >= to_timestamp(${since})` : sql``;
    const open = unanswered
      ? sql`and not exists (
              select 1 from event_refs r
                join events a on a.community_id = r.community_id and a.created_at = r.event_created_at and a.id = r.event_id
               where r.community_id = e.community_id and r.ref_id = e.id and r.event_created_at >= e.created_at
                 and a.pubkey = decode(${reader}, 'hex') and a.deleted_at is null)`
      : sql``;
    const { rows } = await sql<EventRow>`
      select ${EVENT_COLUMNS} from event_mentions m
        join events e on e.community_id = m.community_id and e.id = m.event_id and e.created_at = m.event_created_at
       where m.community_id = ${scope.communityId}::uuid and m.pubkey_hex = ${reader} and e.deleted_at is null
         and e.pubkey <> decode(${reader}, 'hex') and ${scopeSql(scope)} ${visibilitySql(scope.reader, undefined)} ${sinceSql} ${open}
       order by m.event_created_at desc, e.id asc
       limit ${limit}`.execute(db);
    return rows.map(rowToEvent);
  }

  /** Recent events in the reader's accessible channels. */
  async activity(db: Kysely<DB>, scope: ReadScope, since: number | undefined, limit: number): Promise<NostrEvent[]> {
    if (scope.channels !== 'any' && scope.channels.length === 0) return [];
    const sinceSql = since !== undefined ? sql`and e.created_at >= to_timestamp(${since})` : sql``;
    const { rows } = await sql<EventRow>`
      select ${EVENT_COLUMNS} from events e
       where e.community_id = ${scope.communityId}::uuid and e.deleted_at is null and e.channel_id is not null
         and ${scopeSql(scope)} ${visibilitySql(scope.reader, undefined)} ${sinceSql}
       order by e.created_at desc, e.id asc
       limit ${limit}`.execute(db);
    return rows.map(rowToEvent);
  }

  /** Replies under a root, walking forward from an optional (created_at, id) cursor. */
  async threadReplies(
    db: Kysely<DB>,
    scope: ReadScope,
    rootId: string,
    depthLimit: number,
    cursor: { at: number; id: string | undefined } | undefined,
    limit: number,
  ): Promise<NostrEvent[]> {
    const after = cursor
      ? cursor.id
        ? sql`and (e.created_at > to_timestamp(${cursor.at}) or (e.created_at = to_timestamp(${cursor.at}) and e.id > decode(${cursor.id}, 'hex')))`
        : sql`and e.created_at > to_timestamp(${cursor.at})`
      : sql``;
    const { rows } = await sql<EventRow>`
      select ${EVENT_COLUMNS} from thread_metadata t
        join events e on e.community_id = t.community_id and e.created_at = t.event_created_at and e.id = t.event_id
       where t.community_id = ${scope.communityId}::uuid and t.root_event_id = decode(${rootId}, 'hex')
         and t.depth between 1 and ${depthLimit} and e.deleted_at is null and ${scopeSql(scope)} ${visibilitySql(scope.reader, undefined)} ${after}
       order by e.created_at asc, e.id asc
       limit ${limit}`.execute(db);
    return rows.map(rowToEvent);
  }
}

type Keyset = { at: number; id: string } | undefined;

/** Strictly after the keyset position, over a (created_at, id) pair of columns. */
function afterKeyset(after: Keyset, at: RawBuilder<unknown>, id: RawBuilder<unknown>) {
  return after ? sql`and (${at} > to_timestamp(${after.at}) or (${at} = to_timestamp(${after.at}) and ${id} > decode(${after.id}, 'hex')))` : sql``;
}

/** CTEs `r` and `m` through event_refs (see referencingCtes); the keyset is applied to the references. */
function refMatches(scope: ReadScope, ids: readonly string[], kinds: readonly number[], after: Keyset) {
  return referencingCtes(
    scope.communityId,
    ids.map((id) => Buffer.from(id, 'hex')),
    kinds,
    sql`e.deleted_at is null and ${scopeSql(scope)} ${visibilitySql(scope.reader, kinds)}`,
    afterKeyset(after, sql.ref('rf.event_created_at'), sql.ref('rf.event_id')),
  );
}

/** CTE `m`, seed 002's form: one jsonb[] of `[["e",id]]` probes matched with `@> ANY` on the GIN tags index. */
function ginMatches(scope: ReadScope, ids: readonly string[], kinds: readonly number[], after: Keyset) {
  const probes = ids.map((id) => JSON.stringify([['e', id]]));
  return sql`m as materialized (
      select e.id, e.pubkey, e.created_at, e.kind, e.tags, e.content, e.sig from events e
       where e.community_id = ${scope.communityId}::uuid and e.deleted_at is null
         and e.kind = any(${kinds as number[]}::int[])
         and e.tags @> any(${probes}::jsonb[])
         and ${scopeSql(scope)} ${visibilitySql(scope.reader, kinds)} ${afterKeyset(after, sql.ref('e.created_at'), sql.ref('e.id'))}
    )`;
}
