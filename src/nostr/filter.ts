/**
 * NIP-01 filters (parse and in-memory match) (relay.md §2.3). The frame parser is `client-message.ts`.
 *
 * Parse decisions (design choices; the spec leaves them open):
 * - `ids` and `authors` are exact 64-char lowercase hex. Prefix matching is NOT supported: NIP-01
 *   dropped it, it cannot use the bytea equality indexes, and a short prefix is a table scan.
 * - Every list (`ids`, `authors`, `kinds`, each `#x`) holds at most {@link MAX_FILTER_VALUES}
 *   values, the same bound as a page; `#h` is further capped per request by the REQ pipeline.
 * - `null` for a known field means "absent". Empty lists are valid and match nothing.
 * - `#<name>` accepts single- and multi-letter names (`#buzz-channel`); other unknown fields are
 *   kept raw in `extensions` for the HTTP bridge.
 * - `before_id` accepts either hex case and is stored lowercase. A malformed value is reported
 *   before a missing `until`.
 * - A filter's cost is bounded before it reaches a database (docs/security.md): at most
 *   {@link MAX_TAG_KEYS} distinct tag names and {@link MAX_FILTER_TERMS} values in all its lists.
 *   Every tag name adds an index probe and a positional re-check to each statement of the page;
 *   one REQ with 500 names ran 57 s on the writer with gigabytes of backend memory and did not
 *   answer a cancel.
 * - Values that would fail in Postgres rather than match nothing are refused here, so a client
 *   hears `invalid` and not a retryable database error: `since`/`until` past
 *   {@link MAX_FILTER_TIMESTAMP}, and a NUL or an unpaired surrogate in a tag name, a tag value
 *   or `search` (see `nostr/storable-text.ts`).
 */
import { channelIdOf } from './group-id.js';
import { isHex64, lowerHex64 } from './hex.js';
import { NostrEvent, NostrFilter } from './nostr.types.js';
import { unstorableText } from './storable-text.js';

export const MAX_FILTER_VALUES = 1000;
export const MAX_TAG_NAME_LENGTH = 64;
/** Distinct `#<name>` keys one filter may carry. */
export const MAX_TAG_KEYS = 8;
/** Values one filter may carry in all of `ids`, `authors`, `kinds` and its tag lists together. */
export const MAX_FILTER_TERMS = 2000;
/**
 * Largest `since`/`until`: the largest whole second Postgres `to_timestamp` accepts (late on
 * 31 December 294276 UTC); one more is `timestamp out of range` (22008), which the client would
 * hear as a database error. Stored events sit within 15 minutes of their arrival, so a larger
 * bound could match nothing more.
 */
export const MAX_FILTER_TIMESTAMP = 9_224_318_015_999;
/** `DEFAULT_MAX_PAGE_LIMIT`, also NIP-11 `max_limit`. */
export const DEFAULT_MAX_PAGE_LIMIT = 1000;

export const BEFORE_ID_MALFORMED = 'before_id must be a 64-char hex event id';
export const BEFORE_ID_NEEDS_UNTIL = 'before_id requires until to be set';

/**
 * `invalid_filter` reasons go after the caller's `invalid filter: ` (WS) or `invalid filters: `
 * (HTTP) prefix; `invalid_cursor` reasons (the two `before_id` texts) are sent as they are.
 */
export type ParseFilterResult =
  | { ok: true; filter: NostrFilter }
  | { ok: false; code: 'invalid_filter' | 'invalid_cursor'; reason: string };

type FieldParser = (filter: NostrFilter, value: unknown) => string | null;

const LOWER_HEX64_LIST = 'must be an array of 64-char lowercase hex strings';

const FIELD_PARSERS: Record<string, FieldParser> = {
  ids: (f, v) => parseList(v, 'ids', LOWER_HEX64_LIST, isHex64, (list) => (f.ids = list)),
  authors: (f, v) => parseList(v, 'authors', LOWER_HEX64_LIST, isHex64, (list) => (f.authors = list)),
  kinds: (f, v) =>
    parseList(v, 'kinds', 'must be an array of integers between 0 and 65535', isKind, (list) => (f.kinds = list)),
  since: (f, v) => parseCount(v, 'since', (n) => (f.since = n), MAX_FILTER_TIMESTAMP),
  until: (f, v) => parseCount(v, 'until', (n) => (f.until = n), MAX_FILTER_TIMESTAMP),
  limit: (f, v) => parseCount(v, 'limit', (n) => (f.limit = n)),
  search: (f, v) => {
    if (typeof v !== 'string') return 'search must be a string';
    const found = unstorableText(v);
    if (found !== null) return `search contains ${found}`;
    f.search = v;
    return null;
  },
  before_id: () => null, // validated after every field is read: it depends on `until`
};

export function parseFilter(raw: unknown): ParseFilterResult {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    return filterError('filter must be a JSON object');
  }
  const filter: NostrFilter = { tags: {}, extensions: {} };
  for (const [key, value] of Object.entries(raw)) {
    const reason = parseField(filter, key, value);
    if (reason !== null) return filterError(reason);
  }
  const shape = checkShape(filter);
  if (shape !== null) return filterError(shape);
  return applyCursor(filter, (raw as Record<string, unknown>).before_id);
}

/** The cost bounds of a parsed filter (see the header): null when it is within them. */
function checkShape(filter: NostrFilter): string | null {
  const tagKeys = Object.keys(filter.tags);
  if (tagKeys.length > MAX_TAG_KEYS) {
    return `filter has ${tagKeys.length} tag keys, maximum is ${MAX_TAG_KEYS}`;
  }
  const terms = filterTerms(filter);
  if (terms > MAX_FILTER_TERMS) {
    return `filter has ${terms} values in all, maximum is ${MAX_FILTER_TERMS}`;
  }
  return null;
}

/** Values in all of a filter's `ids`, `authors`, `kinds` and tag lists. */
export function filterTerms(filter: NostrFilter): number {
  let terms = (filter.ids?.length ?? 0) + (filter.authors?.length ?? 0) + (filter.kinds?.length ?? 0);
  for (const values of Object.values(filter.tags)) terms += values.length;
  return terms;
}

function parseField(filter: NostrFilter, key: string, value: unknown): string | null {
  if (key.startsWith('#')) {
    return value === null ? null : parseTagField(filter, key, value);
  }
  const parser = Object.hasOwn(FIELD_PARSERS, key) ? FIELD_PARSERS[key] : undefined;
  if (parser === undefined) {
    setOwn(filter.extensions, key, value);
    return null;
  }
  return value === null ? null : parser(filter, value);
}

function parseTagField(filter: NostrFilter, key: string, value: unknown): string | null {
  const name = key.slice(1);
  if (name.length === 0 || name.length > MAX_TAG_NAME_LENGTH) {
    return `tag filter name must be 1 to ${MAX_TAG_NAME_LENGTH} characters`;
  }
  const inName = unstorableText(name);
  if (inName !== null) return `tag filter name contains ${inName}`;
  const error = parseList(value, key, 'must be an array of strings', isString, (list) => setOwn(filter.tags, name, list));
  return error ?? unstorableValue(key, value as string[]);
}

/** A value no stored tag can equal, and that Postgres would refuse as a parameter. */
function unstorableValue(key: string, values: readonly string[]): string | null {
  for (const value of values) {
    const found = unstorableText(value);
    if (found !== null) return `${key} contains ${found}`;
  }
  return null;
}

function applyCursor(filter: NostrFilter, beforeId: unknown): ParseFilterResult {
  if (beforeId === undefined || beforeId === null) {
    return { ok: true, filter };
  }
  const cursorId = lowerHex64(beforeId);
  if (cursorId === undefined) {
    return { ok: false, code: 'invalid_cursor', reason: BEFORE_ID_MALFORMED };
  }
  if (filter.until === undefined) {
    return { ok: false, code: 'invalid_cursor', reason: BEFORE_ID_NEEDS_UNTIL };
  }
  filter.before_id = cursorId;
  return { ok: true, filter };
}

function parseList<T>(
  value: unknown,
  name: string,
  shape: string,
  isItem: (item: unknown) => item is T,
  assign: (list: T[]) => void,
): string | null {
  if (!Array.isArray(value) || !value.every(isItem)) {
    return `${name} ${shape}`;
  }
  if (value.length > MAX_FILTER_VALUES) {
    return `${name} contains ${value.length} values, maximum is ${MAX_FILTER_VALUES}`;
  }
  assign([...value]);
  return null;
}

function parseCount(value: unknown, name: string, assign: (n: number) => void, max?: number): string | null {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    return `${name} must be a non-negative integer`;
  }
  if (max !== undefined && value > max) {
    return `${name} must be at most ${max}`;
  }
  assign(value);
  return null;
}

function filterError(reason: string): ParseFilterResult {
  return { ok: false, code: 'invalid_filter', reason };
}

function isKind(item: unknown): item is number {
  return typeof item === 'number' && Number.isInteger(item) && item >= 0 && item <= 65_535;
}

function isString(item: unknown): item is string {
  return typeof item === 'string';
}

/** Assignment that cannot reach `__proto__` (keys come from client JSON). */
function setOwn<T>(target: Record<string, T>, key: string, value: T): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

/**
 * Full NIP-01 match: every present condition must hold. `search`, `limit` and `extensions` are
 * not event predicates and are ignored here (search relevance is the FTS query's job).
 */
/**
 * NIP-01 matching. `channelId`: the channel the event is stored in (live fan-out knows it); a
 * `#h` naming it matches, whether or not the event carries that `h` tag itself (a reaction or a
 * deletion takes its target's channel). `'h-decided'`: the caller's query already restricted the
 * rows to the filter's channels (a channel-scoped history read), so `#h` is not checked again.
 */
export function matchFilter(ev: NostrEvent, filter: NostrFilter, channelId?: string | null | 'h-decided'): boolean {
  return matchesTime(ev, filter) && matchesLists(ev, filter) && matchesTags(ev, filter.tags, channelId);
}

function matchesTime(ev: NostrEvent, f: NostrFilter): boolean {
  if (f.since !== undefined && ev.created_at < f.since) return false;
  if (f.until === undefined) return true;
  if (f.before_id === undefined) return ev.created_at <= f.until;
  // Composite cursor for `created_at DESC, id ASC`: strictly after (until, before_id).
  return ev.created_at < f.until || (ev.created_at === f.until && ev.id > f.before_id);
}

function matchesLists(ev: NostrEvent, f: NostrFilter): boolean {
  return (
    (f.ids === undefined || contains(f.ids, ev.id)) &&
    (f.authors === undefined || contains(f.authors, ev.pubkey)) &&
    (f.kinds === undefined || contains(f.kinds, ev.kind))
  );
}

/** Positional: some tag has `[0]` = name and `[1]` in the values. */
function matchesTags(ev: NostrEvent, tags: Record<string, string[]>, channelId: string | null | undefined | 'h-decided'): boolean {
  for (const [name, values] of Object.entries(tags)) {
    if (name === 'h' && channelId === 'h-decided') continue;
    if (name === 'h' && typeof channelId === 'string' && values.some((v) => channelIdOf(v) === channelId)) continue;
    if (!ev.tags.some((t) => t.length >= 2 && t[0] === name && contains(values, t[1]))) return false;
  }
  return true;
}

const SET_THRESHOLD = 16;
const setCache = new WeakMap<readonly unknown[], Set<unknown>>();

/** Linear scan for short lists; a Set cached per list (filters are immutable) for long ones. */
function contains<T>(list: readonly T[], value: T): boolean {
  if (list.length <= SET_THRESHOLD) return list.includes(value);
  let set = setCache.get(list);
  if (set === undefined) {
    set = new Set(list);
    setCache.set(list, set);
  }
  return set.has(value);
}

/** Per-filter page size: `min(limit, max)`, defaulting to `max` (§2.7). */
/**
 * True when no event can match the filter: an empty `ids`, `authors` or `kinds` list, an empty
 * tag list (`#e: []`), or `since` after `until`. Such a filter is answered empty without a
 * permit, a connection or a route decision.
 */
export function matchesNothing(f: NostrFilter): boolean {
  if (f.ids?.length === 0 || f.authors?.length === 0 || f.kinds?.length === 0) return true;
  if (f.since !== undefined && f.until !== undefined && f.since > f.until) return true;
  for (const values of Object.values(f.tags)) if (values.length === 0) return true;
  return false;
}

export function effectiveLimit(filter: NostrFilter, max: number = DEFAULT_MAX_PAGE_LIMIT): number {
  return Math.min(filter.limit ?? max, max);
}
