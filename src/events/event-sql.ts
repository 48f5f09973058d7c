import { RawBuilder, sql } from 'kysely';
import { ReadScope } from '../channels/read-scope.js';

/**
 * The wire columns of an `events` row aliased `e`: ids, pubkey and signature as lowercase hex
 * (Postgres prints bytea as hex anyway, so `encode` costs it nothing and spares the relay a
 * Buffer per column and a conversion back), `created_at` as whole epoch seconds.
 */
const columns = (tags: string) =>
  "encode(e.id, 'hex') as id, encode(e.pubkey, 'hex') as pubkey, extract(epoch from e.created_at)::bigint as created_at, " +
  `e.kind, ${tags}, e.content, encode(e.sig, 'hex') as sig`;
export const EVENT_COLUMNS = sql.raw(columns('e.tags'));
/** The same columns with `tags` as the JSON text Postgres prints, for StoredEvent rows. */
export const EVENT_COLUMN_LIST_TAGS_TEXT = columns('e.tags::text as tags');

/**
 * A piece of SQL and its values, split the way a tagged template splits them (`strings` has one
 * element more than `values`). The history read's conditions are written once in this form and
 * then either handed to Kysely (`asKysely`, for the less frequent statements) or compiled
 * straight to `$n` text (`compileSql`): the REQ hot path then skips Kysely's builder and compiler,
 * which took about a tenth of the relay's CPU per REQ.
 */
export interface SqlFragment {
  readonly strings: readonly string[];
  readonly values: readonly unknown[];
}

/** Tag function: `frag\`kind = ${k}::int\``. Values are always bound as parameters. */
export function frag(strings: TemplateStringsArray, ...values: unknown[]): SqlFragment {
  return { strings, values };
}

/** Plain SQL text, with no values, as a fragment. */
export function sqlText(text: string): SqlFragment {
  return { strings: [text], values: [] };
}

/** The fragments joined by `separator` (plain SQL text). */
export function joinFragments(parts: readonly SqlFragment[], separator: string): SqlFragment {
  const strings: string[] = [''];
  const values: unknown[] = [];
  parts.forEach((part, i) => {
    strings[strings.length - 1] += (i > 0 ? separator : '') + part.strings[0];
    for (let v = 0; v < part.values.length; v++) {
      values.push(part.values[v]);
      strings.push(part.strings[v + 1]);
    }
  });
  return { strings, values };
}

export function asKysely<T = unknown>(f: SqlFragment): RawBuilder<T> {
  return sql<T>(f.strings as unknown as TemplateStringsArray, ...f.values);
}

/** `$1`, `$2`, … text and its parameters, for a statement that has no other parameters. */
export function compileSql(f: SqlFragment): { text: string; params: unknown[] } {
  let text = f.strings[0];
  for (let i = 0; i < f.values.length; i++) text += `$${i + 1}${f.strings[i + 1]}`;
  return { text, params: f.values as unknown[] };
}

/**
 * A ReadScope as a condition on an `events` row's channel column, applied before LIMIT.
 *
 * One channel and no channel-less rows (a REQ pinned by a single `#h`, the usual chat read) is
 * bound as `=`, like a single id, author or kind: Postgres 15 walks
 * `(community_id, channel_id, created_at DESC, id)` in order only for `=`. With `= any(array)`
 * the prepared statement's generic plan walked the community's kind index instead and filtered
 * by channel, so a quiet channel in a busy community read thousands of rows for one page.
 */
export function scopeFragment(scope: ReadScope, column: string): SqlFragment {
  if (scope.channels === 'any') return sqlText(scope.includeGlobal ? 'true' : `${column} is not null`);
  const ids = scope.channels as string[];
  if (scope.includeGlobal) return { strings: [`(${column} is null or ${column} = any(`, '::uuid[]))'], values: [ids] };
  return ids.length === 1 ? { strings: [`${column} = `, '::uuid'], values: [ids[0]] } : { strings: [`${column} = any(`, '::uuid[])'], values: [ids] };
}

/** scopeFragment for Kysely statements, over `e.channel_id` unless told otherwise. */
export function scopeSql(scope: ReadScope, column = 'e.channel_id'): RawBuilder<boolean> {
  return asKysely<boolean>(scopeFragment(scope, column));
}

/**
 * LIMIT and OFFSET as literals, not parameters. With `limit $n` Postgres costs a generic plan for
 * an unknown row count (a tenth of the estimate) and keeps re-planning every call, which on the
 * partitioned `events` table costs more than running the query (see database/statement-cache.ts).
 * A literal lets the prepared statement settle on its generic plan. Only integers get here.
 */
export function pageBound(n: number): RawBuilder<number> {
  return sql.lit(checkedBound(n));
}

/** pageBound's check, for SQL built as text. */
export function checkedBound(n: number): number {
  if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`page bound must be a non-negative integer, got ${n}`);
  return n;
}
