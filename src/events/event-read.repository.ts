/**
 * NIP-01 filter → SQL. Every read is confined to one community and to live
 * rows, ordered `created_at DESC, id ASC`. Tag containment is pushed down to the
 * GIN index; callers re-check the positional NIP-01 match on the rows returned.
 */
import { Injectable } from '@nestjs/common';
import { Expression, ExpressionBuilder, Kysely, SqlBool, sql } from 'kysely';
import { NostrEvent, NostrFilter } from '../common/nostr.types.js';
import { DB } from '../database/database.types.js';
import { ReadScope } from './read-scope.js';
import { EventRow, rowToEvent } from './stored-event.js';

type Eb = ExpressionBuilder<DB, 'events'>;

@Injectable()
export class EventReadRepository {
  async query(db: Kysely<DB>, scope: ReadScope, filter: NostrFilter, limit: number): Promise<NostrEvent[]> {
    if (limit <= 0 || filter.kinds?.length === 0) return [];
    const rows = await db
      .selectFrom('events')
      .select([
        'id',
        'pubkey',
        sql<string>`extract(epoch from created_at)::bigint`.as('created_at'),
        'kind',
        'tags',
        'content',
        'sig',
      ])
      .where((eb) => eb.and(whereFilter(eb, scope, filter)))
      // Qualified: a bare `created_at` would name the epoch output column above and
      // defeat every (…, created_at DESC, id) index with a full sort.
      .orderBy('events.created_at', 'desc')
      .orderBy('events.id', 'asc')
      .limit(limit)
      .execute();
    return (rows as unknown as EventRow[]).map(rowToEvent);
  }

  async count(db: Kysely<DB>, scope: ReadScope, filter: NostrFilter): Promise<number> {
    if (filter.kinds?.length === 0) return 0;
    const row = await db
      .selectFrom('events')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where((eb) => eb.and(whereFilter(eb, scope, filter)))
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }
}

export function whereFilter(eb: Eb, scope: ReadScope, f: NostrFilter): Expression<SqlBool>[] {
  const conds: Expression<SqlBool>[] = [eb('community_id', '=', scope.communityId), eb('deleted_at', 'is', null)];
  const scoped = scopeCondition(scope);
  if (scoped) conds.push(scoped);
  // A single value is bound as `=`: Postgres 15 cannot return `col = ANY(array)` in index
  // order, so the one-value case (the common one) would otherwise sort every match.
  if (f.ids) conds.push(f.ids.length === 1 ? sql<SqlBool>`id = ${hexArray(f.ids)[0]}` : sql<SqlBool>`id = any(${hexArray(f.ids)}::bytea[])`);
  if (f.authors) {
    conds.push(f.authors.length === 1 ? sql<SqlBool>`pubkey = ${hexArray(f.authors)[0]}` : sql<SqlBool>`pubkey = any(${hexArray(f.authors)}::bytea[])`);
  }
  if (f.kinds) conds.push(f.kinds.length === 1 ? sql<SqlBool>`kind = ${f.kinds[0]}::int` : sql<SqlBool>`kind = any(${f.kinds}::int[])`);
  if (f.since !== undefined) conds.push(sql<SqlBool>`created_at >= to_timestamp(${f.since})`);
  if (f.until !== undefined && f.before_id === undefined) conds.push(sql<SqlBool>`created_at <= to_timestamp(${f.until})`);
  if (f.until !== undefined && f.before_id !== undefined) {
    // Composite cursor for `created_at DESC, id ASC`: strictly after (until, before_id).
    conds.push(
      sql<SqlBool>`(created_at < to_timestamp(${f.until}) or (created_at = to_timestamp(${f.until}) and id > decode(${f.before_id}, 'hex')))`,
    );
  }
  for (const [key, values] of Object.entries(f.tags)) {
    if (values.length === 0) return [sql<SqlBool>`false`];
    // One bound jsonb[] per tag key; `@> any(...)` becomes a bitmap OR over the GIN index.
    const probes = values.map((v) => JSON.stringify([[key, v]]));
    conds.push(sql<SqlBool>`tags @> any(${probes}::jsonb[])`);
  }
  return conds;
}

function hexArray(values: readonly string[]): Buffer[] {
  return values.map((v) => Buffer.from(v, 'hex'));
}

/** Channel visibility in SQL, applied before LIMIT so a page is never short of visible rows. */
function scopeCondition(scope: ReadScope): Expression<SqlBool> | undefined {
  if (scope.channels === 'any') return scope.includeGlobal ? undefined : sql<SqlBool>`channel_id is not null`;
  const ids = scope.channels as string[];
  if (scope.includeGlobal) return sql<SqlBool>`(channel_id is null or channel_id = any(${ids}::uuid[]))`;
  return sql<SqlBool>`channel_id = any(${ids}::uuid[])`;
}
