import { sql } from 'kysely';
import { ReadScope } from './read-scope.js';

/** A ReadScope as SQL over an `events` row aliased `e`, applied before LIMIT. */
export function scopeSql(scope: ReadScope) {
  if (scope.channels === 'any') return scope.includeGlobal ? sql`true` : sql`e.channel_id is not null`;
  const ids = scope.channels as string[];
  return scope.includeGlobal ? sql`(e.channel_id is null or e.channel_id = any(${ids}::uuid[]))` : sql`e.channel_id = any(${ids}::uuid[])`;
}

