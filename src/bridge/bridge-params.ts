/**
 * Extension fields of bridge filters (read from the raw object, which a
 * standard NIP-01 parser drops), validated into typed branch requests. Every
 * problem is a 400 decided before any read runs.
 */
import { HttpError } from '../common/http-error.js';
import { NostrFilter } from '../common/nostr.types.js';

const HEX64 = /^[0-9a-f]{64}$/;

export type Branch = 'search' | 'presence' | 'window' | 'feed' | 'thread' | 'catchall';

export function branchOf(f: NostrFilter): Branch {
  if (f.search !== undefined) return 'search';
  if (f.kinds?.length === 1 && f.kinds[0] === 20001) return 'presence';
  if (f.extensions.top_level === true) return 'window';
  if (Array.isArray(f.extensions.feed_types)) return 'feed';
  if (f.extensions.depth_limit !== undefined && f.tags.e?.length === 1 && HEX64.test(f.tags.e[0])) return 'thread';
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
  if (f.tags.h?.length !== 1) throw new HttpError(400, 'top_level requires exactly one #h channel');
  const beforeId = f.before_id ?? f.extensions.before_id;
  if (beforeId !== undefined && (typeof beforeId !== 'string' || !HEX64.test(beforeId))) {
    throw new HttpError(400, 'top_level: before_id must be a 64-hex event id');
  }
  if ((f.until === undefined) !== (beforeId === undefined)) {
    throw new HttpError(400, 'top_level cursor requires both until and before_id, or neither');
  }
  if (f.until !== undefined && (f.until < 0 || f.until > 253_402_300_799)) throw new HttpError(400, 'top_level: until is out of range');
  return {
    channelId: f.tags.h[0].toLowerCase(),
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
  if (at !== undefined && (typeof at !== 'number' || !Number.isInteger(at) || at < 0)) throw new HttpError(400, 'invalid filters: thread_cursor must be unix seconds');
  if (id !== undefined && (typeof id !== 'string' || !HEX64.test(id))) throw new HttpError(400, 'invalid filters: thread_cursor_id must be a 64-hex event id');
  return {
    rootId: f.tags.e![0],
    depthLimit: Math.min(depth, 1000),
    limit: clampLimit(f.limit, 100, 500),
    cursor: at !== undefined ? { at: at as number, id: id as string | undefined } : undefined,
    includeAux: f.extensions.include_aux === true,
  };
}

export interface SearchParams {
  readonly text: string;
  readonly prefix: boolean;
  readonly limit: number;
  readonly page: number;
}

export function searchParams(f: NostrFilter): SearchParams {
  const page = f.extensions.page ?? f.extensions.search_page ?? f.extensions.searchPage ?? 1;
  if (typeof page !== 'number' || !Number.isInteger(page) || page < 1) throw new HttpError(400, 'invalid filters: page must be an integer >= 1');
  const mode = f.extensions.search_mode ?? f.extensions.searchMode;
  return { text: f.search ?? '', prefix: mode === 'prefix', limit: clampLimit(f.limit, 100, 500), page };
}

export function clampLimit(limit: number | undefined, def: number, max: number): number {
  if (limit === undefined) return def;
  return Math.max(1, Math.min(limit, max));
}
