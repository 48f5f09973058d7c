/**
 * The history read's SQL, built from a NIP-01 filter: the page statements EventReadRepository
 * runs (the plain page, the event_tags walk, the tag walk with its GIN fallback, the `#e` forms),
 * the filter's conditions, and the rules that choose among them. Nothing here touches a
 * connection. Every read is confined to one community and to live rows, ordered
 * `created_at DESC, id ASC`; tags are re-checked positionally in SQL, so LIMIT counts only real
 * matches.
 *
 * Over 350 lines: the statements and the rules that choose among them are reviewed together, with
 * their committed SQL beside (src/queries/history-pages.sql); split, a rule and the statement it
 * picks would sit in different files.
 */
import { RawBuilder, sql } from 'kysely';
import { channelIdsOf } from '../nostr/group-id.js';
import { isHex64 } from '../nostr/hex.js';
import { NostrFilter } from '../nostr/nostr.types.js';
import { GENERIC_PLAN } from '@buzz-relay/read-path/internal';
import { asKysely, checkedBound, compileSql, sqlText, EVENT_COLUMN_LIST_TAGS_TEXT, EVENT_COLUMNS, frag, joinFragments, scopeFragment, SqlFragment } from './event-sql.js';
import { ReadScope } from '../channels/read-scope.js';
import { EventRow, PAGE_ROW_FIXED_BYTES } from './stored-event.js';
import { visibilityFragment } from './visibility.js';

/** A statement compiled to `$n` text, for `CompiledQuery.raw`. */
export interface PageStatement {
  text: string;
  params: unknown[];
}

/**
 * The statement of one history page (not `#e`), with the recent window's `floor` when given.
 * Without an offset, a page filtered by an indexed tag walks event_tags (tagIndexWalk); one with
 * another GIN tag probe takes the tag walk, which for a complete page (no floor) falls back on
 * the GIN index (walkThenGin). The recent window's statement only walks: a page it cannot fill is
 * read again in full anyway, and the fallback's three further scans would each set up every
 * partition they may reach. `plan` is GENERIC_PLAN or '' (hasValueIndependentPlan).
 */
export function pageStatement(
  scope: ReadScope,
  filter: NostrFilter,
  parts: FilterConditions,
  plan: string,
  limit: number,
  offset: number,
  floor?: number,
): PageStatement {
  const windowed = floor === undefined ? parts : { ...parts, base: [...parts.base, ...createdAtBounds({ since: floor }, 'created_at', 'id')] };
  const key = offset === 0 ? tagIndexKey(filter) : undefined;
  if (key !== undefined) return tagIndexWalk(scope, filter, key, windowed, limit, floor);
  if (parts.ginTerms.length > 0 && offset === 0) {
    return floor === undefined ? walkThenGin(windowed, limit) : compileSql(joinFragments([sqlText(GENERIC_PLAN), tagWalk(windowed, limit, EVENT_COLUMN_LIST_TAGS_TEXT)], ''));
  }
  // Qualified ORDER BY: a bare `created_at` would name the epoch output column and defeat
  // every (…, created_at DESC, id) index with a full sort.
  const bounds = `limit ${checkedBound(limit)}${offset > 0 ? ` offset ${checkedBound(offset)}` : ''}`;
  const where = joinFragments([...windowed.base, ...tagConditions(windowed, 'indexable')], ' and ');
  return compileSql(joinFragments([sqlText(`${plan}select ${EVENT_COLUMN_LIST_TAGS_TEXT} from events e where `), where, sqlText(` ${PAGE_ORDER} ${bounds}`)], ''));
}

/**
 * Seed 002's set-based form of an `#e` page: the whole filtered select is fenced in a
 * MATERIALIZED CTE (ORDER/LIMIT outside), so the planner cannot pick the early-stop backward
 * primary-key walk. When every `#e` value is a lowercase 64-hex id (refIds), the candidate rows
 * come from `event_refs` (a btree lookup per id, joined to `events` by its primary key) instead
 * of the GIN tags index, whose pending list every lookup scans; the positional re-check still
 * runs on the joined rows. Other values keep the GIN prefilter.
 */
export function eTagPage(scope: ReadScope, filter: NostrFilter, limit: number, offset: number): RawBuilder<EventRow> {
  const refs = refIds(filter);
  const page = offset > 0 ? sql`offset ${offset}` : sql``;
  if (refs) {
    return sql<EventRow>`
          with ${referencingCtes(scope.communityId, refs, filter.kinds, eventConditions(scope, filter))}
          select ${EVENT_COLUMNS} from m e order by e.created_at desc, e.id asc limit ${limit} ${page}`;
  }
  return sql<EventRow>`
        with m as materialized (
          select e.id, e.pubkey, e.created_at, e.kind, e.tags, e.content, e.sig from events e
           where ${filterPredicate(scope, filter)})
        select ${EVENT_COLUMNS} from m e order by e.created_at desc, e.id asc limit ${limit} ${page}`;
}

/** The count of an `#e` filter whose values are all event ids, through event_refs; undefined for any other filter. */
export function referencingCount(scope: ReadScope, filter: NostrFilter): RawBuilder<{ n: string }> | undefined {
  const refs = refIds(filter);
  if (!refs) return undefined;
  return sql<{ n: string }>`with ${referencingCtes(scope.communityId, refs, filter.kinds, eventConditions(scope, filter))} select count(*) as n from m`;
}

/** whereFilter's conditions joined by `and`, for a Kysely `where`. */
export function filterPredicate(scope: ReadScope, filter: NostrFilter): RawBuilder<boolean> {
  return asKysely<boolean>(joinFragments(whereFilter(scope, filter), ' and '));
}

/**
 * A page filtered by an indexed tag (tagIndexKey), as one statement: for each of the tag's values,
 * its event_tags rows newest first (an index-only walk of `event_tags_walk`, with the kinds and
 * time bounds checked on the index entry), each looked up in `events` by primary key and kept when
 * the row passes the rest of the filter, until `limit` rows pass. The values' pages are merged,
 * an event that carries two of the values counted once. Every match among a value's rows up to
 * its `limit`-th is read, so the merge holds the page: an event in the page has fewer than `limit`
 * matches ahead of it, so fewer than `limit` ahead of it among the rows of its own value.
 *
 * The cost follows the rows walked: about `limit` per value when the rest of the filter passes
 * most of the tag's rows, the common case of a kind and a tag. A filter with authors or ids keeps
 * the other form (tagIndexKey). Runs on its generic plan (GENERIC_PLAN): no value changes it.
 */
function tagIndexWalk(scope: ReadScope, f: NostrFilter, key: string, parts: FilterConditions, limit: number, floor: number | undefined): PageStatement {
  const page = checkedBound(limit);
  const onIndex: SqlFragment[] = [frag`tg.community_id = ${scope.communityId}::uuid`, frag`tg.name = ${key}`, sqlText('tg.value = v.value')];
  if (f.kinds) onIndex.push(f.kinds.length === 1 ? frag`tg.event_kind = ${f.kinds[0]}::int` : frag`tg.event_kind = any(${f.kinds}::int[])`);
  onIndex.push(...createdAtBounds(f, 'tg.event_created_at', 'tg.event_id'));
  if (floor !== undefined) onIndex.push(...createdAtBounds({ since: floor }, 'tg.event_created_at', 'tg.event_id'));
  const walkOrder = 'order by tg.event_created_at desc, tg.event_id asc';
  return compileSql(
    joinFragments(
      [
        sqlText(`${GENERIC_PLAN}select distinct on (e.created_at, e.id) ${EVENT_COLUMN_LIST_TAGS_TEXT} from (select x.* from unnest(`),
        frag`${f.tags[key]}::text[]`,
        sqlText(') as v(value) cross join lateral (select x.* from (select tg.event_created_at, tg.event_id from event_tags tg where '),
        joinFragments(onIndex, ' and '),
        sqlText(` ${walkOrder}) tg cross join lateral (select ${RAW_COLUMNS} from events e where e.created_at = tg.event_created_at and e.id = tg.event_id and `),
        joinFragments([...parts.base, ...tagConditions(parts, 'rows', key)], ' and '),
        sqlText(` offset 0) x ${walkOrder} limit ${page}) x) e ${PAGE_ORDER} limit ${page}`),
      ],
      '',
    ),
  );
}

/**
 * A page filtered by a tag probe on the GIN index (`#t`, custom tags), as one statement that
 * does not depend on how common the tag is:
 *
 * 1. `hits` walks the other conditions' index in page order and stops at the `limit`-th match
 *    or after `walkBudget(limit)` rows (tagWalk);
 * 2. only when the walk used its whole budget without finding `limit` matches does `cand` ask
 *    the GIN index for the tag's rows, by key, with no condition but the community and the tag
 *    probes (so the planner cannot AND in a range of another index over the whole community);
 *    `rest` looks each one up by primary key and keeps those that pass the filter and come
 *    after the walk's last row (`last`, in created_at DESC, id ASC order).
 *
 * Left to the planner, one plan served every value: walking the kind index (a rare tag then
 * reads the whole community) or a GIN bitmap and a sort of every match (a common one then
 * reads and sorts all of them, 4 ms of Postgres CPU per page of 20 among 10,000 rows, growing
 * with the community). The first walk's rows are the newest, so the two parts are disjoint and
 * together hold the page. The statement runs on its generic plan (GENERIC_PLAN).
 */
function walkThenGin(parts: FilterConditions, limit: number): PageStatement {
  const base = joinFragments(parts.base, ' and ');
  const tags = joinFragments(tagConditions(parts, 'rows'), ' and ');
  const walk = walkBudget(limit);
  const page = checkedBound(limit);
  return compileSql(
    joinFragments(
      [
        sqlText(`${GENERIC_PLAN}with hits as materialized (`),
        tagWalk(parts, limit, RAW_COLUMNS),
        // The fallback, gated on the count so that a page the walk filled reads none of it. No
        // `last` row means the walk saw every row, so there is nothing after it to look up.
        sqlText(`), last as materialized (select e.created_at, e.id from events e where (select count(*) from hits) < ${page} and `),
        base,
        // The candidates of one tag (the one with fewest values; `rest` checks the others), each
        // value its own index probe. Given the values as one `@> any(…)`, and worse two of them
        // ANDed, the generic plan could leave the GIN index for a scan of the community that
        // tested every value on every row (2 × 250 values: 0.95 s against 3 ms), and which one it
        // took changed with the sampled statistics; a probe per value leaves it no such scan.
        sqlText(` ${PAGE_ORDER} offset ${walk - 1} limit 1), cand as materialized (select distinct c.created_at, c.id from unnest(`),
        frag`${parts.ginTerms[0].probes}::jsonb[]`,
        sqlText(`) as p(probe) cross join lateral (select e.created_at, e.id from events e where (select count(*) from hits) < ${page} and (select count(*) from last) = 1 and `),
        parts.base[0],
        sqlText(` and e.tags @> p.probe offset 0) c), rest as materialized (select c.* from cand cross join lateral (select ${RAW_COLUMNS} from events e where e.created_at = cand.created_at and e.id = cand.id and `),
        base,
        sqlText(' and '),
        tags,
        sqlText(
          ` and (e.created_at < (select created_at from last) or (e.created_at = (select created_at from last) and e.id > (select id from last))) offset 0) c)` +
            ` select ${EVENT_COLUMN_LIST_TAGS_TEXT} from (select * from hits union all select * from rest) e ${PAGE_ORDER} limit ${page}`,
        ),
      ],
      '',
    ),
  );
}

/**
 * The tag walk alone: the page's matches among the first `walkBudget(limit)` rows of the other
 * conditions in page order, as a select of `columns` (over `e`). It stops at its `limit`-th match.
 */
function tagWalk(parts: FilterConditions, limit: number, columns: string): SqlFragment {
  return joinFragments(
    [
      sqlText(`select ${columns} from (select ${RAW_COLUMNS} from events e where `),
      joinFragments(parts.base, ' and '),
      sqlText(` ${PAGE_ORDER} limit ${walkBudget(limit)}) e where `),
      joinFragments(tagConditions(parts, 'rows'), ' and '),
      sqlText(` ${PAGE_ORDER} limit ${checkedBound(limit)}`),
    ],
    '',
  );
}

const PAGE_ORDER = 'order by e.created_at desc, e.id asc';

/**
 * CTEs `r` and `m` of the reference-table form (migration 0016), both MATERIALIZED:
 *
 * - `r`: the distinct (created_at, id) keys of events in the community whose `e`-bearing tags
 *   reference one of `ids` (32-byte buffers), of `kinds` when given, after `refKeyset` (over
 *   `rf.event_created_at` / `rf.event_id`);
 * - `m`: those events' rows (`e.*` wire columns) that pass `rowConditions` (over `events e`).
 *
 * Each id and each candidate is its own LATERAL probe (`offset 0` keeps the planner from
 * flattening it into a join): an event_refs primary-key lookup per id, then one events
 * primary-key lookup per candidate, partition-pruned at run time. The cost follows the number of
 * matches, never the size of the community; as a plain join, small or skewed tables got a hash
 * join over sequential scans of every partition instead.
 */
export function referencingCtes(
  communityId: string,
  ids: readonly Buffer[],
  kinds: readonly number[] | undefined,
  rowConditions: RawBuilder<unknown>,
  refKeyset: RawBuilder<unknown> = sql``,
) {
  const ofKinds = kinds ? sql`and rf.event_kind = any(${kinds as number[]}::int[])` : sql``;
  return sql`r as materialized (
      select distinct x.event_created_at, x.event_id
        from unnest(${ids as Buffer[]}::bytea[]) as q(ref_id)
        cross join lateral (
          select rf.event_created_at, rf.event_id from event_refs rf
           where rf.community_id = ${communityId}::uuid and rf.ref_id = q.ref_id ${ofKinds} ${refKeyset}
          offset 0) x
    ), m as materialized (
      select c.* from r cross join lateral (
        select e.id, e.pubkey, e.created_at, e.kind, e.tags, e.content, e.sig from events e
         where e.community_id = ${communityId}::uuid and e.created_at = r.event_created_at and e.id = r.event_id
           and ${rowConditions}
        offset 0) c
    )`;
}

/** The filter's conditions (positional `e` re-check included) as SQL over the `events e` probe of referencingCtes. */
function eventConditions(scope: ReadScope, filter: NostrFilter): RawBuilder<unknown> {
  return asKysely(joinFragments(whereFilter(scope, filter, 'refs'), ' and '));
}

/** The `#e` values as 32-byte ids when event_refs can answer for all of them (it stores only lowercase 64-hex). */
function refIds(filter: NostrFilter): Buffer[] | undefined {
  const values = filter.tags.e;
  return values && values.length > 0 && values.every(isEventRefId) ? hexArray(values) : undefined;
}

/** Whether event_refs can hold `value`: the ids it stores are exactly the lowercase 64-hex strings. */
export const isEventRefId = isHex64;

export function hasETags(filter: NostrFilter): boolean {
  return (filter.tags.e?.length ?? 0) > 0;
}

/**
 * The filter's conditions on an `events` row. `eTags: 'refs'` when the candidates were already
 * found through event_refs: the `e` GIN prefilter is left out (the planner would otherwise be
 * free to probe the GIN index again) and only the positional re-check stays.
 */
export function whereFilter(scope: ReadScope, f: NostrFilter, eTags: 'gin' | 'refs' = 'gin'): SqlFragment[] {
  const parts = filterConditions(scope, f, eTags);
  return parts ? [...parts.base, ...tagConditions(parts, 'indexable')] : [frag`false`];
}

/** whereFilter's conditions, the tag conditions apart. */
export interface FilterConditions {
  /** The community first, then the rest of the non-tag conditions. */
  base: SqlFragment[];
  /** The tags the GIN index can answer, fewest values first: each one's `[[name, value]]` probes. */
  ginTerms: Array<{ readonly probes: string[] }>;
  /** The tag conditions by tag name: each name's GIN probe (when it has one) and positional re-check. */
  tagsByKey: ReadonlyMap<string, TagConditions>;
}

/** One tag name's conditions. */
export interface TagConditions {
  /** `tags @> any(…)`: answered by the GIN index, but row by row it costs one containment test per value. */
  readonly probe?: SqlFragment;
  /** Whether the probe also goes in where rows come from elsewhere: a short list, whose probe is a cheap first test. */
  readonly probeRows: boolean;
  /** NIP-01's positional test (element 0 the name, element 1 one of the values). */
  readonly check: SqlFragment;
}

/**
 * Every tag condition of `parts`, but those of the tag `except`. `indexable`: the statement may
 * reach its rows through the GIN index, so the probes go in beside the checks. `rows`: the rows
 * come from elsewhere (a walk, a primary-key lookup), and a long list's probe stays out: tested on
 * a row it costs a jsonb containment test per value (250 values over a walk of 5,000 rows took a
 * second of Postgres CPU), where its hashed check costs one lookup per tag of the row. A short
 * list keeps its probe in front, as the cheaper first test of most rows.
 */
function tagConditions(parts: FilterConditions, use: 'indexable' | 'rows', except?: string): SqlFragment[] {
  return [...parts.tagsByKey].flatMap(([key, { probe, probeRows, check }]) =>
    key === except ? [] : probe && (use === 'indexable' || probeRows) ? [probe, check] : [check],
  );
}

/** How far back (seconds) the first statement of a history page reads: see recentFloor. */
export const RECENT_WINDOW_SECS = 7 * 86_400;

/**
 * The floor (epoch seconds) of the recent window a page without an offset is read in first, or
 * undefined when the filter's own bounds already keep the statement to few partitions: a `since`
 * at or above the floor (the whole filter is inside the window) or an `until` below it (the
 * window holds none of it).
 *
 * Why: a statement over `events` sets up a scan of every monthly partition its bounds do not
 * exclude, and there is one more partition every month. With the 16 partitions of a new schema,
 * that setup was 46% of Postgres's CPU in a profile of the REQ bench's kind pages (about 5 µs a
 * partition on an idle server). The newest rows of a busy community all lie in the last days.
 * A page the window cannot fill is read again over every partition, in one statement and so one
 * snapshot, so a page never joins two snapshots. One the window fills is the page a statement over
 * every partition would have returned at that snapshot: every row outside the window is older.
 */
export function recentFloor(f: NostrFilter, nowMs: number): number | undefined {
  const floor = Math.floor(nowMs / 1000) - RECENT_WINDOW_SECS;
  if (f.since !== undefined && f.since >= floor) return undefined;
  if (f.until !== undefined && f.until < floor) return undefined;
  return floor;
}

/** Rows an index walk may read before a tag page falls back to the GIN index (walkThenGin). */
export function walkBudget(limit: number): number {
  return Math.min(Math.max(50 * limit, 1000), 5000);
}

const RAW_COLUMNS = 'e.id, e.pubkey, e.created_at, e.kind, e.tags, e.content, e.sig';

/** undefined when the filter matches nothing (an empty tag value list). */
export function filterConditions(scope: ReadScope, f: NostrFilter, eTags: 'gin' | 'refs' = 'gin'): FilterConditions | undefined {
  const conds: SqlFragment[] = [frag`community_id = ${scope.communityId}::uuid`, frag`deleted_at is null`];
  const ginTerms: Array<{ probes: string[] }> = [];
  // Channel visibility in SQL, applied before LIMIT so a page is never short of visible rows.
  conds.push(scopeFragment(scope, 'channel_id'));
  // A single value is bound as `=`: Postgres 15 cannot return `col = ANY(array)` in index
  // order, so the one-value case (the common one) would otherwise sort every match.
  if (f.ids) conds.push(f.ids.length === 1 ? frag`id = ${hexArray(f.ids)[0]}` : frag`id = any(${hexArray(f.ids)}::bytea[])`);
  if (f.authors) conds.push(f.authors.length === 1 ? frag`pubkey = ${hexArray(f.authors)[0]}` : frag`pubkey = any(${hexArray(f.authors)}::bytea[])`);
  if (f.kinds) conds.push(f.kinds.length === 1 ? frag`kind = ${f.kinds[0]}::int` : frag`kind = any(${f.kinds}::int[])`);
  conds.push(...createdAtBounds(f, 'created_at', 'id'));
  // The reader's visibility rules, before LIMIT too: a page or a count holds only rows they may see.
  const visible = scope.reader === undefined ? undefined : visibilityFragment(scope.reader, f.kinds);
  if (visible) conds.push(visible);
  const tagsByKey = new Map<string, TagConditions>();
  for (const [key, values] of Object.entries(f.tags)) {
    if (values.length === 0) return undefined;
    // One bound jsonb[] per tag key; `@> any(...)` becomes a bitmap OR over the GIN index.
    // Not for `#h` when the scope names the channels (a `#h` REQ is always scoped to them): the
    // channel index already narrows the rows, in page order, and with a GIN term the generic plan
    // ANDed two bitmaps and sorted the whole channel instead.
    const ginPrefilter = key === 'e' ? eTags === 'gin' : tagUsesGin(key, scope);
    if (key === 'h' && !ginPrefilter) {
      // A channel-scoped `#h` is a condition on the channel column: the channel an event is
      // stored in, its own `h` tag or, for a reaction or a deletion that carries none, its
      // target's (derived at ingest; the event stays as signed). When the scope names only
      // channels of this filter (one filter, or filters of the same channels) the scope's
      // condition is the whole of it.
      const ids = channelIdsOf(values);
      if (!(scope.channels as string[]).every((c) => ids.includes(c))) tagsByKey.set(key, { probeRows: false, check: frag`channel_id = any(${ids}::uuid[])` });
      continue;
    }
    const probes = values.map((v) => JSON.stringify([[key, v]]));
    const probe = ginPrefilter ? frag`tags @> any(${probes}::jsonb[])` : undefined;
    if (probe) ginTerms.push({ probes });
    // Containment also matches reordered or namespaced arrays: re-check NIP-01's
    // position (element 0 is the name, element 1 a value) before LIMIT.
    tagsByKey.set(key, { probe, probeRows: values.length < HASHED_TAG_VALUES_FROM, check: positionalCheck(key, values) });
  }
  return { base: conds, ginTerms: ginTerms.sort((a, b) => a.probes.length - b.probes.length), tagsByKey };
}

/**
 * From this many values on, a tag's positional check looks each tag of a row up in a hash of the
 * values (a hashed semi-join, built once per statement) instead of comparing it with every value:
 * Postgres hashes `= any(array)` only for a constant array, and the values are bound parameters.
 */
export const HASHED_TAG_VALUES_FROM = 16;

/**
 * Whether a history read decides this filter's `#h` on the channel column (the scope's channels,
 * and a `channel_id` condition when the scope names others too) rather than on the event's tags:
 * then a row needs no `h` tag of its own to match it.
 */
export function channelDecidesH(scope: ReadScope, f: NostrFilter): boolean {
  return f.tags.h !== undefined && !tagUsesGin('h', scope);
}

/** The row has a tag named `key` whose first value is one of `values` (NIP-01's position). */
function positionalCheck(key: string, values: readonly string[]): SqlFragment {
  return values.length < HASHED_TAG_VALUES_FROM
    ? frag`exists (select 1 from jsonb_array_elements(tags) t where t->>0 = ${key} and t->>1 = any(${values}::text[]))`
    : frag`exists (select 1 from jsonb_array_elements(tags) t where t->>0 = ${key} and t->>1 in (select unnest(${values}::text[])))`;
}

/**
 * `since`, `until` and the `before_id` cursor as conditions on the given created_at and id
 * columns (of `events`, or of an index table that copies them).
 */
function createdAtBounds(f: Pick<NostrFilter, 'since' | 'until' | 'before_id'>, createdAt: string, id: string): SqlFragment[] {
  const out: SqlFragment[] = [];
  if (f.since !== undefined) out.push({ strings: [`${createdAt} >= to_timestamp(`, ')'], values: [f.since] });
  if (f.until !== undefined && f.before_id === undefined) out.push({ strings: [`${createdAt} <= to_timestamp(`, ')'], values: [f.until] });
  if (f.until !== undefined && f.before_id !== undefined) {
    // Composite cursor for `created_at DESC, id ASC`: strictly after (until, before_id).
    out.push({
      strings: [`(${createdAt} < to_timestamp(`, `) or (${createdAt} = to_timestamp(`, `) and ${id} > decode(`, ", 'hex')))"],
      values: [f.until, f.until, f.before_id],
    });
  }
  return out;
}

/** Tag names event_tags holds (migration 0018): one ASCII letter, but not `e` (event_refs) or `h` (the channel column). */
function isIndexedTagName(key: string): boolean {
  return /^[A-Za-z]$/.test(key) && key !== 'e' && key !== 'h';
}
/** The longest value (UTF-8 bytes) event_tags holds; a longer one is read through the GIN index. */
export const INDEXED_TAG_VALUE_MAX_BYTES = 256;
/** The most values of one tag a page walks in event_tags, one walk each; more go through the GIN index. */
const MAX_WALKED_TAG_VALUES = 32;

/**
 * The tag a page without an offset walks in event_tags (tagIndexWalk), or undefined when it
 * keeps the other forms: the first tag of the filter that the table holds for every value given,
 * when the filter names no authors and no ids. Those two are usually narrower than any tag, and
 * their own index walk (tagWalk) reads fewer rows than every row of a common tag value would.
 */
export function tagIndexKey(f: NostrFilter): string | undefined {
  if (f.ids !== undefined || f.authors !== undefined) return undefined;
  return Object.keys(f.tags).find((key) => {
    const values = f.tags[key];
    return (
      isIndexedTagName(key) &&
      values.length > 0 &&
      values.length <= MAX_WALKED_TAG_VALUES &&
      values.every((v) => Buffer.byteLength(v, 'utf8') <= INDEXED_TAG_VALUE_MAX_BYTES)
    );
  });
}

/** Whether a tag filter other than `#e` is prefiltered on the GIN index: all but a channel-scoped `#h`. */
function tagUsesGin(key: string, scope: ReadScope): boolean {
  return key !== 'h' || scope.channels === 'any';
}

/**
 * Whether the history page's best plan is the same whatever the values: an index walk in page
 * order that stops at LIMIT, because every condition that narrows the rows is one value on an
 * index column (one id, one author, one kind, one pinned channel) or the reader's channel scope.
 * Such a page runs on the generic plan from its first call (GENERIC_PLAN). A list of ids, authors
 * or kinds is left to the planner: a rare value is best served by a bitmap and a sort, a common one
 * by the walk. So is a page with a tag probe on the GIN index when it has an offset (the bridge's
 * `page`); without one it goes through the tag walk (tagWalk, walkThenGin), which makes that choice itself.
 */
export function hasValueIndependentPlan(scope: ReadScope, f: NostrFilter): boolean {
  const pinnedChannel = scope.channels !== 'any' && scope.channels.length === 1 && !scope.includeGlobal;
  const tagsNeedGin = Object.keys(f.tags).some((key) => key === 'e' || tagUsesGin(key, scope));
  if (tagsNeedGin || (f.ids?.length ?? 1) > 1 || (f.authors?.length ?? 1) > 1) return false;
  return (f.kinds?.length ?? 1) <= 1 || pinnedChannel || f.authors !== undefined;
}

/**
 * Whether every statement EventReadRepository.query runs for this page carries the GENERIC_PLAN
 * mark: a plain page whose plan cannot depend on the values, or a tag page without an offset
 * (the event_tags walk, the tag walk and its GIN fallback are always marked). `#e` pages are not.
 */
export function allStatementsGeneric(scope: ReadScope, f: NostrFilter, offset: number): boolean {
  if (hasETags(f)) return false;
  const tagWalk = offset === 0 && Object.keys(f.tags).some((key) => tagUsesGin(key, scope));
  return tagWalk || hasValueIndependentPlan(scope, f);
}

function hexArray(values: readonly string[]): Buffer[] {
  return values.map((v) => Buffer.from(v, 'hex'));
}

/**
 * A page statement cut at `cap` bytes (PAGE_ROW_FIXED_BYTES per row besides content and tags),
 * in page order: the rows whose running total stays within the cap, and always the first row
 * (one event larger than the cap is still served, alone). The rows past the cut never leave
 * Postgres, so a REQ over large events cannot make the relay hold more than its memory lease.
 * Each row carries `page_rows`, how many rows the page had before the cut.
 */
export function byteCapped(statement: PageStatement, cap: number): PageStatement {
  const prefix = statement.text.startsWith(GENERIC_PLAN) ? GENERIC_PLAN : '';
  const [open, close, end] = cappedSelect('p.tags');
  const n = statement.params.length + 1;
  const text = `${prefix}${open}(${statement.text.slice(prefix.length)})${close}$${n}::bigint${end}`;
  return { text, params: [...statement.params, checkedBound(cap)] };
}

/** eTagPage cut at `cap` bytes, as byteCapped. */
export function byteCappedETagPage(page: RawBuilder<EventRow>, cap: number): RawBuilder<EventRow & { page_rows: string }> {
  const [open, close, end] = cappedSelect('p.tags::text');
  return sql<EventRow & { page_rows: string }>`${sql.raw(open)}(${page})${sql.raw(close)}${checkedBound(cap)}::bigint${sql.raw(end)}`;
}

/** The capped select around a page, in three pieces: before the page, between the page and the cap, after the cap. */
function cappedSelect(tags: string): [string, string, string] {
  const row = `octet_length(p.content) + octet_length(${tags}) + ${PAGE_ROW_FIXED_BYTES}`;
  return [
    'select q.id, q.pubkey, q.created_at, q.kind, q.tags, q.content, q.sig, q.page_rows from (' +
      `select p.*, ${row} as row_bytes, sum(${row}) over (order by p.created_at desc, p.id collate "C" asc rows unbounded preceding) as page_bytes, ` +
      'count(*) over () as page_rows from ',
    ' p) q where q.page_bytes <= ',
    ' or q.page_bytes = q.row_bytes order by q.created_at desc, q.id collate "C" asc',
  ];
}
