import { RawBuilder, sql } from 'kysely';
import { ReadScope } from './read-scope.js';

/** The wire columns of an `events` row aliased `e`, `created_at` as whole epoch seconds. */
export const EVENT_COLUMNS = sql`e.id, e.pubkey, extract(epoch from e.created_at)::bigint as created_at, e.kind, e.tags, e.content, e.sig`;

/** A ReadScope as SQL over an `events` row's channel column (default `e.channel_id`), applied before LIMIT. */
export function scopeSql(scope: ReadScope, channel: RawBuilder<unknown> = sql.ref('e.channel_id')) {
  if (scope.channels === 'any') return scope.includeGlobal ? sql<boolean>`true` : sql<boolean>`${channel} is not null`;
  const ids = scope.channels as string[];
  return scope.includeGlobal ? sql<boolean>`(${channel} is null or ${channel} = any(${ids}::uuid[]))` : sql<boolean>`${channel} = any(${ids}::uuid[])`;
}

/**
 * LIMIT and OFFSET as literals, not parameters. With `limit $n` Postgres costs a generic plan for
 * an unknown row count (a tenth of the estimate) and keeps re-planning every call, which on the
 * partitioned `events` table costs more than running the query (see database/statement-cache.ts).
 * A literal lets the prepared statement settle on its generic plan. Only integers get here.
 */
export function pageBound(n: number): RawBuilder<number> {
  if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`page bound must be a non-negative integer, got ${n}`);
  return sql.lit(n);
}
