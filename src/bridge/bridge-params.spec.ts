import { HttpError } from '../common/http-error.js';
import { NostrFilter } from '../common/nostr.types.js';
import { parseFilter } from '../events/filter.js';
import { branchOf, feedTypes, searchParams, threadParams, windowParams } from './bridge-params.js';
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
    [{ top_level: true, '#h': [H], until: 99999999999999, before_id: ID }, 'top_level: until is out of range'],
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
