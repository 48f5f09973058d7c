import { HttpError } from '../common/http-error.js';
import { NostrFilter } from '../nostr/nostr.types.js';
import { MAX_FILTER_TIMESTAMP, parseFilter } from '../nostr/filter.js';
import { branchOf, catchAllParams, feedTypes, MAX_PAGE_OFFSET, searchParams, threadParams, threadWindowRequest, validateExtensions, windowParams } from './bridge-params.js';
import { parseBridgeFilters } from './bridge-filters.js';

const H = '0b6f1c9e-5a0e-4b9e-9d53-2d2b9b0a1c11';
const ID = 'a'.repeat(64);

function filter(raw: object): NostrFilter {
  const parsed = parseFilter(raw);
  if (!parsed.ok) throw new Error(parsed.reason);
  return parsed.filter;
}

function httpError(fn: () => unknown): { status: number; message: string } {
  try {
    fn();
  } catch (e) {
    if (e instanceof HttpError) return { status: e.status, message: e.message };
    throw e;
  }
  throw new Error('expected an HttpError');
}

describe('branchOf', () => {
  it.each([
    [{ search: 'x' }, 'search'],
    [{ kinds: [20001], authors: [ID] }, 'presence'],
    [{ top_level: true, '#h': [H] }, 'window'],
    [{ feed_types: ['mentions'] }, 'feed'],
    [{ depth_limit: 2, '#e': [ID] }, 'thread'],
    [{ depth_limit: 2, '#e': [ID, 'b'.repeat(64)] }, 'catchall'],
    [{ kinds: [1] }, 'catchall'],
  ])('%j -> %s', (raw, branch) => {
    expect(branchOf(filter(raw))).toBe(branch);
  });

  it('gives top_level precedence over feeds and threads', () => {
    expect(branchOf(filter({ top_level: true, '#h': [H], feed_types: ['mentions'], depth_limit: 1, '#e': [ID] }))).toBe('window');
  });
});

describe('windowParams', () => {
  it('defaults to a head page of 50 and clamps the limit to 200', () => {
    expect(windowParams(filter({ top_level: true, '#h': [H] }))).toMatchObject({ channelId: H, limit: 50, cursor: undefined });
    expect(windowParams(filter({ top_level: true, '#h': [H], limit: 999 })).limit).toBe(200);
  });

  it.each([
    [{ top_level: true }, 'top_level requires exactly one #h channel'],
    [{ top_level: true, '#h': [H, H] }, 'top_level requires exactly one #h channel'],
    [{ top_level: true, '#h': [H], until: 5 }, 'top_level cursor requires both until and before_id, or neither'],
    [{ top_level: true, '#h': [H], until: 999_999_999_999, before_id: ID }, 'top_level: until is out of range'],
  ])('refuses %j with a 400', (raw, message) => {
    expect(httpError(() => windowParams(filter(raw)))).toEqual({ status: 400, message });
  });
});

describe('other branch parameters', () => {
  it('keeps feed types in order, aliases agent_activity and drops unknowns and repeats', () => {
    expect(feedTypes(filter({ feed_types: ['activity', 'nope', 'mentions', 'agent_activity', 'needs_action'] }))).toEqual(['activity', 'mentions', 'needs_action']);
  });

  it('reads thread cursors under both spellings and validates them', () => {
    expect(threadParams(filter({ depth_limit: 2, '#e': [ID], threadCursor: 10, threadCursorId: ID }))).toMatchObject({ cursor: { at: 10, id: ID }, limit: 100 });
    expect(httpError(() => threadParams(filter({ depth_limit: 0, '#e': [ID] }))).status).toBe(400);
    expect(httpError(() => threadParams(filter({ depth_limit: 1, '#e': [ID], thread_cursor_id: 'zz' }))).status).toBe(400);
  });

  it('refuses a thread cursor that to_timestamp would fail on', () => {
    expect(threadParams(filter({ depth_limit: 2, '#e': [ID], thread_cursor: MAX_FILTER_TIMESTAMP })).cursor).toEqual({ at: MAX_FILTER_TIMESTAMP, id: undefined });
    expect(httpError(() => threadParams(filter({ depth_limit: 2, '#e': [ID], thread_cursor: MAX_FILTER_TIMESTAMP + 1 })))).toEqual({
      status: 400,
      message: 'invalid filters: thread_cursor must be unix seconds',
    });
  });

  it('reads search paging and mode', () => {
    expect(searchParams(filter({ search: 'hi', searchPage: 3, searchMode: 'prefix', limit: 900 }))).toEqual({ text: 'hi', prefix: true, limit: 500, page: 3 });
  });
});

describe('parseBridgeFilters', () => {
  it.each([
    ['{', /^invalid filters: body is not valid JSON/],
    ['{}', /^invalid filters: body must be a JSON array/],
    [JSON.stringify(Array.from({ length: 11 }, () => ({}))), /^invalid filters: request contains 11 filters, maximum is 10$/],
    [JSON.stringify([{ kinds: 'x' }]), /^invalid filters: filter 0: /],
    [JSON.stringify([{ until: 1, before_id: 'zz' }]), /^before_id must be a 64-char hex event id$/],
    [JSON.stringify([{ consistency: 'eventual' }]), /^invalid filters: consistency must be "strong"$/],
    [JSON.stringify([{ consistency: 1 }]), /^invalid filters: consistency must be "strong"$/],
    [JSON.stringify([{ '#h': Array.from({ length: 129 }, () => H) }]), /^too many explicit channels$/],
    [JSON.stringify([{ kinds: [1] }, { until: Number.MAX_SAFE_INTEGER }]), /^invalid filters: filter 1: until must be at most 9224318015999$/],
    [JSON.stringify([{ '#e': ['a\u0000'] }]), /^invalid filters: filter 0: #e contains a NUL character \(U\+0000\)$/],
    [JSON.stringify([{ search: 'a\ud800' }]), /^invalid filters: filter 0: search contains an unpaired surrogate \(U\+D800\)$/],
  ])('refuses %s with a 400', (body, message) => {
    const err = httpError(() => parseBridgeFilters(body, true));
    expect(err.status).toBe(400);
    expect(err.message).toMatch(message);
  });

  it('accepts consistency strong and ignores it on /count', () => {
    expect(parseBridgeFilters(JSON.stringify([{ consistency: 'strong' }]), true)[0].extensions.consistency).toBe('strong');
    expect(parseBridgeFilters(JSON.stringify([{ consistency: 'whatever' }]), false)).toHaveLength(1);
  });
});

describe('catch-all page', () => {
  it('turns page n into an offset of (n-1)*limit, capped like the limit', () => {
    expect(catchAllParams(filter({ kinds: [0] }))).toEqual({ offset: 0 });
    expect(catchAllParams(filter({ kinds: [0], page: 1 }))).toEqual({ offset: 0 });
    expect(catchAllParams(filter({ kinds: [0], limit: 20, page: 3 }))).toEqual({ offset: 40 });
    expect(catchAllParams(filter({ kinds: [0], limit: 5000, page: 2 }))).toEqual({ offset: 1000 });
  });

  it.each([
    [{ page: 0, limit: 10 }, 'invalid filters: page must be an integer >= 1'],
    [{ page: 1.5, limit: 10 }, 'invalid filters: page must be an integer >= 1'],
    [{ page: '2', limit: 10 }, 'invalid filters: page must be an integer >= 1'],
    [{ page: 2 }, 'invalid filters: page requires limit'],
    [{ page: 102, limit: 1000 }, `invalid filters: page is out of range (at most ${MAX_PAGE_OFFSET} rows may be skipped)`],
  ])('refuses %j with a 400', (raw, message) => {
    expect(httpError(() => catchAllParams(filter(raw)))).toEqual({ status: 400, message });
  });
});

describe('thread_window', () => {
  const thread = { depth_limit: 3, '#e': [ID] };

  it('is off when absent or false and a head window when true', () => {
    expect(threadWindowRequest(filter(thread))).toBeUndefined();
    expect(threadWindowRequest(filter({ ...thread, thread_window: false }))).toBeUndefined();
    expect(threadWindowRequest(filter({ ...thread, thread_window: true }))).toEqual({ cursor: undefined });
    expect(threadWindowRequest(filter({ ...thread, thread_window: { version: 1, direction: 'older', cursor: null } }))).toEqual({ cursor: undefined });
  });

  it('takes the next_cursor of a bounds overlay back as its cursor', () => {
    expect(threadWindowRequest(filter({ ...thread, thread_window: { cursor: { created_at: 1700000000, id: ID } } }))).toEqual({ cursor: { createdAt: 1700000000, id: ID } });
  });

  it.each([
    [1, 'invalid filters: thread_window must be false, true or a window request object'],
    ['yes', 'invalid filters: thread_window must be false, true or a window request object'],
    [[], 'invalid filters: thread_window must be false, true or a window request object'],
    [{ limit: 5 }, 'invalid filters: thread_window has unknown field "limit"'],
    [{ version: 2 }, 'invalid filters: thread_window version must be 1'],
    [{ direction: 'newer' }, 'invalid filters: thread_window direction must be "older"'],
    [{ cursor: { created_at: 1 } }, 'invalid filters: thread_window cursor must be {"created_at": unix seconds, "id": 64-hex event id}'],
    [{ cursor: { created_at: -1, id: ID } }, 'invalid filters: thread_window cursor must be {"created_at": unix seconds, "id": 64-hex event id}'],
    [{ cursor: { created_at: 1, id: 'A'.repeat(64) } }, 'invalid filters: thread_window cursor must be {"created_at": unix seconds, "id": 64-hex event id}'],
  ])('refuses %j with a 400', (value, message) => {
    expect(httpError(() => threadWindowRequest(filter({ ...thread, thread_window: value })))).toEqual({ status: 400, message });
  });

  it('cannot be combined with the forward thread cursor', () => {
    expect(httpError(() => threadWindowRequest(filter({ ...thread, thread_window: true, thread_cursor: 5 })))).toEqual({
      status: 400,
      message: 'invalid filters: thread_window cannot be combined with thread_cursor',
    });
  });

  it('allows four windows per query, needs a thread filter, and checks every filter before any read', () => {
    const check = (raws: object[]) => {
      const fs = raws.map(filter);
      validateExtensions(fs, fs.map(branchOf));
    };
    const window = { ...thread, thread_window: true };
    expect(() => check([window, window, window, window])).not.toThrow();
    expect(httpError(() => check([window, window, window, window, window]))).toEqual({ status: 400, message: 'at most four thread windows per query' });
    expect(httpError(() => check([{ kinds: [9], thread_window: true }]))).toEqual({
      status: 400,
      message: 'invalid filters: thread_window requires depth_limit and exactly one 64-hex #e root',
    });
    expect(httpError(() => check([window, { kinds: [0], page: 2 }])).message).toBe('invalid filters: page requires limit');
  });
});
