/**
 * NIP-50 search on Postgres full-text search over the generated `search_tsv`
 * column (private kinds have none). Relevance order, then newest first.
 */
import { Injectable } from '@nestjs/common';
import { Kysely, RawBuilder, sql } from 'kysely';
import { NostrEvent, NostrFilter } from '../nostr/nostr.types.js';
import { DB } from '@buzz-relay/read-path';
import { channelIdsOf } from '../nostr/group-id.js';
import { filterPredicate } from './event-read.queries.js';
import { EVENT_COLUMNS, scopeSql } from './event-sql.js';
import { ReadScope } from '../channels/read-scope.js';
import { visibilitySql } from './visibility.js';
import { EventRow, rowToEvent } from './stored-event.js';

export interface SearchFilter {
  readonly kinds?: number[];
  readonly authors?: string[];
  readonly since?: number;
  readonly until?: number;
  readonly tags?: Record<string, string[]>;
}

@Injectable()
export class SearchRepository {
  /** One page of matching ids in relevance order, within the scope, live rows only. */
  async matchIds(db: Kysely<DB>, scope: ReadScope, text: string, prefix: boolean, filter: SearchFilter, limit: number, offset: number): Promise<string[]> {
    const query = prefix ? sql`to_tsquery('simple', ${prefixQuery(text)})` : sql`websearch_to_tsquery('simple', ${text})`;
    if (prefix && prefixQuery(text) === '') return [];
    const { rows } = await sql<{ id: Buffer }>`
      select e.id from events e
       where ${matching(scope, query, filter)}
       order by ts_rank(e.search_tsv, ${query}) desc, e.created_at desc, e.id asc
       limit ${limit} offset ${offset}`.execute(db);
    return rows.map((r) => r.id.toString('hex'));
  }

  /**
   * COUNT's fallback for a `search` filter, counted where the rows are: the candidates are the
   * rows matchIds would find for `filter.search` (at most `limit` of them, in no order: every
   * candidate is counted, so none is ranked), and `matched` those of them that pass the whole
   * filter (its ids and tags, the conditions a full-text match does not check). No row leaves
   * Postgres: one row of two numbers comes back, where reading the candidates into the relay to
   * test them there cost a COUNT of ten such filters up to 50,000 rows.
   */
  async countMatches(db: Kysely<DB>, scope: ReadScope, filter: NostrFilter & { search: string }, limit: number): Promise<{ candidates: number; matched: number }> {
    const query = sql`websearch_to_tsquery('simple', ${filter.search})`;
    const row = await sql<{ candidates: number; matched: number }>`
      select count(*)::int as candidates, (count(*) filter (where c.matched))::int as matched
        from (select ${filterPredicate(scope, filter)} as matched from events e where ${matching(scope, query, filter)} limit ${limit}) c`
      .execute(db)
      .then((r) => r.rows[0]);
    if (!row) throw new Error('count returned no row');
    return row;
  }

  /** Live rows for ids in one community, in the order of `ids` (absent ids are skipped). */
  async byIds(db: Kysely<DB>, communityId: string, ids: readonly string[]): Promise<NostrEvent[]> {
    if (ids.length === 0) return [];
    const { rows } = await sql<EventRow>`
      select ${EVENT_COLUMNS} from events e
       where e.community_id = ${communityId}::uuid and e.deleted_at is null
         and e.id = any(${ids.map((id) => Buffer.from(id, 'hex'))}::bytea[])`.execute(db);
    const byId = new Map(rows.map((r) => [r.id, rowToEvent(r)]));
    return ids.flatMap((id) => byId.get(id) ?? []);
  }
}

/** The rows of `scope` a full-text `query` finds, live, within the filter's kinds, authors, times and channels, that the reader may see. */
function matching(scope: ReadScope, query: RawBuilder<unknown>, filter: SearchFilter): RawBuilder<unknown> {
  const kinds = filter.kinds ? sql`and e.kind = any(${filter.kinds}::int[])` : sql``;
  const authors = filter.authors ? sql`and e.pubkey = any(${filter.authors.map((a) => Buffer.from(a, 'hex'))}::bytea[])` : sql``;
  const since = filter.since !== undefined ? sql`and e.created_at >= to_timestamp(${filter.since})` : sql``;
  const until = filter.until !== undefined ? sql`and e.created_at <= to_timestamp(${filter.until})` : sql``;
  // A channel-scoped `#h` is the channel a row is stored in, as for history reads (channelDecidesH):
  // a reaction or comment without an `h` of its own is found in its target's channel.
  const h = filter.tags?.h;
  const channels = h !== undefined && scope.channels !== 'any' ? sql`and e.channel_id = any(${channelIdsOf(h)}::uuid[])` : sql``;
  return sql`e.community_id = ${scope.communityId}::uuid and e.deleted_at is null and e.search_tsv @@ ${query}
         and ${scopeSql(scope)} ${kinds} ${authors} ${since} ${until} ${channels} ${visibilitySql(scope.reader, filter.kinds)}`;
}

/** Each word becomes a prefix term: `hel wor` → `hel:* & wor:*`; punctuation is dropped. */
export function prefixQuery(text: string): string {
  return text
    .split(/\s+/)
    .map((w) => w.replace(/[^\p{L}\p{N}_]/gu, ''))
    .filter((w) => w.length > 0)
    .map((w) => `${w}:*`)
    .join(' & ');
}
