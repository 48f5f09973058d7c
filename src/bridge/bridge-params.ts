/**
 * Extension fields of bridge filters (read from the raw object, which a
 * standard NIP-01 parser drops), validated into typed branch requests. Every
 * problem is a 400 decided before any read runs.
 */
import { channelIdOf } from '../nostr/group-id.js';
import { HttpError } from '../common/http-error.js';
import { NostrFilter } from '../nostr/nostr.types.js';
import { effectiveLimit, MAX_FILTER_TIMESTAMP } from '../nostr/filter.js';
import { isHex64 } from '../nostr/hex.js';

/** 9999-12-31T23:59:59Z, the largest timestamp Postgres `to_timestamp` round-trips for us. */
const MAX_UNIX_SECONDS = 253_402_300_799;

/** Aux closure kinds (relay.md §3.4): first hop reactions, deletions and edits; second hop deletions of those. */
export const AUX_KINDS = [5, 7, 9005, 40003];
export const AUX_SECOND_HOP_KINDS = [5, 9005];

export type Branch = 'search' | 'presence' | 'window' | 'feed' | 'thread' | 'catchall';

export function branchOf(f: NostrFilter): Branch {
  if (f.search !== undefined) return 'search';
  if (f.kinds?.length === 1 && f.kinds[0] === 20001) return 'presence';
  if (f.extensions.top_level === true) return 'window';
  if (Array.isArray(f.extensions.feed_types)) return 'feed';
  if (f.extensions.depth_limit !== undefined && f.tags.e?.length === 1 && isHex64(f.tags.e[0])) return 'thread';
  return 'catchall';
}

export interface WindowParams {
  readonly channelId: string;
  readonly limit: number;
  readonly cursor: { until: number; beforeId: string } | undefined;
  readonly includeAux: boolean;
  readonly includeSummaries: boolean;
}

export function windowParams(f: NostrFilter): WindowParams {
  const channelId = f.tags.h?.length === 1 ? channelIdOf(f.tags.h[0]) : undefined;
  if (channelId === undefined) throw new HttpError(400, 'top_level requires exactly one #h channel');
  const beforeId = f.before_id ?? f.extensions.before_id;
  if (beforeId !== undefined && !isHex64(beforeId)) {
    throw new HttpError(400, 'top_level: before_id must be a 64-hex event id');
  }
  if ((f.until === undefined) !== (beforeId === undefined)) {
    throw new HttpError(400, 'top_level cursor requires both until and before_id, or neither');
  }
  if (f.until !== undefined && (f.until < 0 || f.until > MAX_UNIX_SECONDS)) throw new HttpError(400, 'top_level: until is out of range');
  return {
    channelId,
    limit: clampLimit(f.limit, 50, 200),
    cursor: f.until !== undefined ? { until: f.until, beforeId: beforeId as string } : undefined,
    includeAux: f.extensions.include_aux === true,
    includeSummaries: f.extensions.include_summaries === true,
  };
}

export type FeedType = 'mentions' | 'needs_action' | 'activity';

export function feedTypes(f: NostrFilter): FeedType[] {
  const out: FeedType[] = [];
  for (const raw of f.extensions.feed_types as unknown[]) {
    const t = raw === 'agent_activity' ? 'activity' : raw;
    if ((t === 'mentions' || t === 'needs_action' || t === 'activity') && !out.includes(t)) out.push(t);
  }
  return out;
}

export interface ThreadParams {
  readonly rootId: string;
  readonly depthLimit: number;
  readonly limit: number;
  readonly cursor: { at: number; id: string | undefined } | undefined;
  readonly includeAux: boolean;
}

export function threadParams(f: NostrFilter): ThreadParams {
  const depth = f.extensions.depth_limit;
  if (typeof depth !== 'number' || !Number.isInteger(depth) || depth < 1) throw new HttpError(400, 'invalid filters: depth_limit must be a positive integer');
  const at = f.extensions.thread_cursor ?? f.extensions.threadCursor;
  const id = f.extensions.thread_cursor_id ?? f.extensions.threadCursorId;
  if (at !== undefined && (typeof at !== 'number' || !Number.isInteger(at) || at < 0 || at > MAX_FILTER_TIMESTAMP)) throw new HttpError(400, 'invalid filters: thread_cursor must be unix seconds');
  if (id !== undefined && !isHex64(id)) throw new HttpError(400, 'invalid filters: thread_cursor_id must be a 64-hex event id');
  return {
    rootId: f.tags.e![0],
    depthLimit: Math.min(depth, 1000),
    limit: clampLimit(f.limit, 100, 500),
    cursor: at !== undefined ? { at: at as number, id: id as string | undefined } : undefined,
    includeAux: f.extensions.include_aux === true,
  };
}

export const MAX_THREAD_WINDOWS = 4;
const WINDOW_KEYS = new Set(['version', 'direction', 'cursor']);

/** A thread-window request (relay.md §3.6b): the head, or the page older than `cursor`. */
export interface ThreadWindowRequest {
  readonly cursor: { readonly createdAt: number; readonly id: string } | undefined;
}

/**
 * The raw `thread_window` field. `false` or absent: the legacy forward walk (undefined). `true`:
 * the head window. An object may carry `version` (1), `direction` ("older", the only one) and
 * `cursor` (null, or the `next_cursor` of the previous window's bounds overlay). Anything else,
 * or a window combined with the forward `thread_cursor`, is a 400.
 */
export function threadWindowRequest(f: NostrFilter): ThreadWindowRequest | undefined {
  const raw = f.extensions.thread_window;
  if (raw === undefined || raw === false) return undefined;
  if (raw === true) return forwardCursorless(f, { cursor: undefined });
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new HttpError(400, 'invalid filters: thread_window must be false, true or a window request object');
  }
  const req = raw as Record<string, unknown>;
  const unknown = Object.keys(req).find((k) => !WINDOW_KEYS.has(k));
  if (unknown !== undefined) throw new HttpError(400, `invalid filters: thread_window has unknown field ${JSON.stringify(unknown)}`);
  if (req.version !== undefined && req.version !== 1) throw new HttpError(400, 'invalid filters: thread_window version must be 1');
  if (req.direction !== undefined && req.direction !== 'older') throw new HttpError(400, 'invalid filters: thread_window direction must be "older"');
  return forwardCursorless(f, { cursor: windowCursor(req.cursor) });
}

function windowCursor(raw: unknown): ThreadWindowRequest['cursor'] {
  if (raw === undefined || raw === null) return undefined;
  const c = raw as { created_at?: unknown; id?: unknown };
  const at = c.created_at;
  if (typeof raw !== 'object' || Array.isArray(raw) || typeof at !== 'number' || !Number.isInteger(at) || at < 0 || at > MAX_UNIX_SECONDS || !isHex64(c.id)) {
    throw new HttpError(400, 'invalid filters: thread_window cursor must be {"created_at": unix seconds, "id": 64-hex event id}');
  }
  return { createdAt: at, id: c.id };
}

function forwardCursorless(f: NostrFilter, req: ThreadWindowRequest): ThreadWindowRequest {
  const forward = ['thread_cursor', 'threadCursor', 'thread_cursor_id', 'threadCursorId'].some((k) => f.extensions[k] !== undefined);
  if (forward) throw new HttpError(400, 'invalid filters: thread_window cannot be combined with thread_cursor');
  return req;
}

/**
 * Request-wide checks of the extension fields, before any branch reads: each filter's own
 * parameters, a thread window only on a thread-replies filter, and at most four windows.
 */
export function validateExtensions(filters: readonly NostrFilter[], branches: readonly Branch[]): void {
  let windows = 0;
  filters.forEach((f, i) => {
    const window = threadWindowRequest(f);
    if (window && branches[i] !== 'thread') throw new HttpError(400, 'invalid filters: thread_window requires depth_limit and exactly one 64-hex #e root');
    if (window) windows += 1;
    if (branches[i] === 'search') searchParams(f);
    if (branches[i] === 'window') windowParams(f);
    if (branches[i] === 'thread') threadParams(f);
    if (branches[i] === 'catchall') catchAllParams(f);
  });
  if (windows > MAX_THREAD_WINDOWS) throw new HttpError(400, 'at most four thread windows per query');
}

export interface SearchParams {
  readonly text: string;
  readonly prefix: boolean;
  readonly limit: number;
  readonly page: number;
}

export function searchParams(f: NostrFilter): SearchParams {
  const page = pageNumber(f.extensions.page ?? f.extensions.search_page ?? f.extensions.searchPage);
  const mode = f.extensions.search_mode ?? f.extensions.searchMode;
  return { text: f.search ?? '', prefix: mode === 'prefix', limit: clampLimit(f.limit, 100, 500), page };
}

/**
 * Deepest catch-all row a `page` may reach. OFFSET still reads and discards every skipped row,
 * so an unbounded page number would be an unbounded scan.
 */
export const MAX_PAGE_OFFSET = 100_000;

export interface CatchAllParams {
  /** Rows skipped before the page: `(page-1)*limit`, 0 for page 1 or no page. */
  readonly offset: number;
}

/**
 * Catch-all `page` (relay.md §3.3 step 6): an integer ≥ 1; a page past the first sets the offset
 * to `(page-1)*limit` and therefore needs `limit` (the kind-0 people directory pages this way).
 */
export function catchAllParams(f: NostrFilter): CatchAllParams {
  const page = pageNumber(f.extensions.page);
  if (page === 1) return { offset: 0 };
  if (f.limit === undefined) throw new HttpError(400, 'invalid filters: page requires limit');
  const offset = (page - 1) * effectiveLimit(f);
  if (offset > MAX_PAGE_OFFSET) throw new HttpError(400, `invalid filters: page is out of range (at most ${MAX_PAGE_OFFSET} rows may be skipped)`);
  return { offset };
}

function pageNumber(raw: unknown): number {
  if (raw === undefined) return 1;
  if (typeof raw !== 'number' || !Number.isInteger(raw) || raw < 1) throw new HttpError(400, 'invalid filters: page must be an integer >= 1');
  return raw;
}

export function clampLimit(limit: number | undefined, def: number, max: number): number {
  if (limit === undefined) return def;
  return Math.max(1, Math.min(limit, max));
}
