import { matchFilter as nostrToolsMatch } from 'nostr-tools/filter';
import { NostrEvent, NostrFilter } from './nostr.types.js';
import {
  MAX_FILTER_TERMS,
  MAX_FILTER_TIMESTAMP,
  MAX_FILTER_VALUES,
  MAX_TAG_KEYS,
  effectiveLimit,
  matchFilter,
  parseFilter,
} from './filter.js';

const A = 'a'.repeat(64);
const B = 'b'.repeat(64);
const C = 'c'.repeat(64);

function parsed(raw: unknown): NostrFilter {
  const result = parseFilter(raw);
  if (!result.ok) throw new Error(`unexpected parse failure: ${result.reason}`);
  return result.filter;
}

function ev(overrides: Partial<NostrEvent> = {}): NostrEvent {
  return { id: A, pubkey: B, created_at: 1000, kind: 9, tags: [], content: '', sig: 'f'.repeat(128), ...overrides };
}

describe('parseFilter', () => {
  it('parses every NIP-01 field, #tags and keeps unknown fields as extensions', () => {
    const raw = {
      ids: [A],
      authors: [B],
      kinds: [9, 40002],
      since: 10,
      until: 20,
      limit: 5,
      search: 'hello',
      '#e': [C],
      '#buzz-channel': ['x'],
      consistency: 'strong',
      top_level: true,
      page: 2,
    };
    expect(parseFilter(raw)).toEqual({
      ok: true,
      filter: {
        ids: [A],
        authors: [B],
        kinds: [9, 40002],
        since: 10,
        until: 20,
        limit: 5,
        search: 'hello',
        tags: { e: [C], 'buzz-channel': ['x'] },
        extensions: { consistency: 'strong', top_level: true, page: 2 },
      },
    });
  });

  it('returns empty tags and extensions for an empty filter', () => {
    expect(parseFilter({})).toEqual({ ok: true, filter: { tags: {}, extensions: {} } });
  });

  it('treats null on a known field as absent', () => {
    expect(parsed({ since: null, ids: null, '#e': null, search: null })).toEqual({ tags: {}, extensions: {} });
  });

  it('keeps empty lists (they match nothing)', () => {
    expect(parsed({ kinds: [], '#h': [] })).toEqual({ kinds: [], tags: { h: [] }, extensions: {} });
  });

  it.each<[string, unknown, string]>([
    ['a non-object', [], 'filter must be a JSON object'],
    ['null', null, 'filter must be a JSON object'],
    ['ids with a prefix', { ids: ['abcd'] }, 'ids must be an array of 64-char lowercase hex strings'],
    ['uppercase ids', { ids: [A.toUpperCase()] }, 'ids must be an array of 64-char lowercase hex strings'],
    ['ids not an array', { ids: A }, 'ids must be an array of 64-char lowercase hex strings'],
    ['short authors', { authors: ['b'] }, 'authors must be an array of 64-char lowercase hex strings'],
    ['string kinds', { kinds: ['9'] }, 'kinds must be an array of integers between 0 and 65535'],
    ['kind out of range', { kinds: [65_536] }, 'kinds must be an array of integers between 0 and 65535'],
    ['negative since', { since: -1 }, 'since must be a non-negative integer'],
    ['fractional until', { until: 1.5 }, 'until must be a non-negative integer'],
    ['string limit', { limit: '10' }, 'limit must be a non-negative integer'],
    ['non-string search', { search: 1 }, 'search must be a string'],
    ['non-array tag values', { '#e': A }, '#e must be an array of strings'],
    ['non-string tag value', { '#p': [1] }, '#p must be an array of strings'],
    ['an empty tag name', { '#': ['x'] }, 'tag filter name must be 1 to 64 characters'],
    ['a too-long tag name', { ['#' + 'x'.repeat(65)]: ['x'] }, 'tag filter name must be 1 to 64 characters'],
    ['since past what Postgres holds', { since: 9_007_199_254_740_991 }, 'since must be at most 9224318015999'],
    ['until one past what Postgres holds', { until: MAX_FILTER_TIMESTAMP + 1 }, 'until must be at most 9224318015999'],
    ['a NUL in a tag value', { '#t': ['ok', 'a\u0000'] }, '#t contains a NUL character (U+0000)'],
    ['a NUL in an #e value', { '#e': ['a\u0000'] }, '#e contains a NUL character (U+0000)'],
    ['a lone surrogate in a tag value', { '#t': ['a\ud800'] }, '#t contains an unpaired surrogate (U+D800)'],
    ['a NUL in a tag name', { '#\u0000': ['a'] }, 'tag filter name contains a NUL character (U+0000)'],
    ['a lone surrogate in a tag name', { '#\udc00': ['a'] }, 'tag filter name contains an unpaired surrogate (U+DC00)'],
    ['a NUL in search', { search: 'a\u0000' }, 'search contains a NUL character (U+0000)'],
    ['a lone surrogate in search', { search: '\udbff' }, 'search contains an unpaired surrogate (U+DBFF)'],
  ])('rejects %s', (_label, raw, reason) => {
    expect(parseFilter(raw)).toEqual({ ok: false, code: 'invalid_filter', reason });
  });

  it('accepts since and until up to what Postgres holds, and astral text in tags and search', () => {
    expect(parsed({ since: 0, until: MAX_FILTER_TIMESTAMP })).toEqual({ since: 0, until: MAX_FILTER_TIMESTAMP, tags: {}, extensions: {} });
    expect(parsed({ limit: Number.MAX_SAFE_INTEGER }).limit).toBe(Number.MAX_SAFE_INTEGER);
    const text = '\u{1f600}\u{10ffff}\uffff\u0001\u2028';
    expect(parsed({ ['#' + text]: [text], search: text })).toEqual({ tags: { [text]: [text] }, search: text, extensions: {} });
  });

  it(`caps every list at ${MAX_FILTER_VALUES} values`, () => {
    const ids = (n: number) => Array.from({ length: n }, (_, i) => i.toString(16).padStart(64, '0'));
    expect(parseFilter({ ids: ids(MAX_FILTER_VALUES) }).ok).toBe(true);
    expect(parseFilter({ ids: ids(MAX_FILTER_VALUES + 1) })).toEqual({
      ok: false,
      code: 'invalid_filter',
      reason: 'ids contains 1001 values, maximum is 1000',
    });
    expect(parseFilter({ '#e': Array(MAX_FILTER_VALUES + 1).fill('x') })).toEqual({
      ok: false,
      code: 'invalid_filter',
      reason: '#e contains 1001 values, maximum is 1000',
    });
  });

  it(`refuses more than ${MAX_TAG_KEYS} tag keys, naming the limit`, () => {
    const keys = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`#k${i}`, ['a']]));
    expect(parseFilter(keys(MAX_TAG_KEYS)).ok).toBe(true);
    expect(parseFilter(keys(MAX_TAG_KEYS + 1))).toEqual({ ok: false, code: 'invalid_filter', reason: `filter has 9 tag keys, maximum is ${MAX_TAG_KEYS}` });
    expect(parseFilter(keys(500))).toEqual({ ok: false, code: 'invalid_filter', reason: `filter has 500 tag keys, maximum is ${MAX_TAG_KEYS}` });
  });

  it(`refuses more than ${MAX_FILTER_TERMS} values across every list of a filter`, () => {
    const hex = (n: number, at = 0) => Array.from({ length: n }, (_, i) => (i + at).toString(16).padStart(64, '0'));
    expect(parseFilter({ ids: hex(1000), authors: hex(1000) }).ok).toBe(true);
    expect(parseFilter({ ids: hex(1000), authors: hex(1000), kinds: [1] })).toEqual({
      ok: false,
      code: 'invalid_filter',
      reason: `filter has 2001 values in all, maximum is ${MAX_FILTER_TERMS}`,
    });
    const tags = { '#a': Array(700).fill('x'), '#b': Array(700).fill('y'), '#c': Array(601).fill('z') };
    expect(parseFilter(tags)).toEqual({ ok: false, code: 'invalid_filter', reason: 'filter has 2001 values in all, maximum is 2000' });
  });

  describe('before_id (§2.3)', () => {
    it('accepts a 64-hex cursor with until and stores it lowercase', () => {
      expect(parsed({ until: 5, before_id: 'AB'.repeat(32) })).toEqual({
        until: 5,
        before_id: 'ab'.repeat(32),
        tags: {},
        extensions: {},
      });
    });

    it('requires until', () => {
      expect(parseFilter({ before_id: A })).toEqual({
        ok: false,
        code: 'invalid_cursor',
        reason: 'before_id requires until to be set',
      });
      expect(parseFilter({ before_id: A, until: null }).ok).toBe(false);
    });

    it.each([['short'], [1], ['g'.repeat(64)], ['a'.repeat(66)]])('rejects a malformed cursor %p', (beforeId) => {
      expect(parseFilter({ until: 5, before_id: beforeId })).toEqual({
        ok: false,
        code: 'invalid_cursor',
        reason: 'before_id must be a 64-char hex event id',
      });
    });

    it('reports a malformed cursor before a missing until', () => {
      expect(parseFilter({ before_id: 'short' })).toMatchObject({ reason: 'before_id must be a 64-char hex event id' });
    });
  });

  it('cannot be steered into prototype pollution by client keys', () => {
    const raw = JSON.parse('{"__proto__": {"polluted": true}, "#__proto__": ["x"]}') as unknown;
    const filter = parsed(raw);
    expect(Object.getPrototypeOf(filter.extensions)).toBe(Object.prototype);
    expect(Object.getPrototypeOf(filter.tags)).toBe(Object.prototype);
    expect(Object.keys(filter.tags)).toEqual(['__proto__']);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe('matchFilter', () => {
  it('matches ids, authors and kinds by membership', () => {
    expect(matchFilter(ev(), parsed({ ids: [C, A], authors: [B], kinds: [1, 9] }))).toBe(true);
    expect(matchFilter(ev(), parsed({ ids: [C] }))).toBe(false);
    expect(matchFilter(ev(), parsed({ authors: [A] }))).toBe(false);
    expect(matchFilter(ev(), parsed({ kinds: [1] }))).toBe(false);
  });

  it('matches #h by the channel the event is stored in, with or without an h tag of its own', () => {
    const channel = '0b6f4f36-53a4-4f1c-9f5e-4d3c1a1f0e2d';
    const reaction = ev({ kind: 7, tags: [['e', A]] });
    const f = parsed({ '#h': [channel.toUpperCase()] });
    expect(matchFilter(reaction, f)).toBe(false);
    expect(matchFilter(reaction, f, channel)).toBe(true);
    expect(matchFilter(reaction, f, '2b6f4f36-53a4-4f1c-9f5e-4d3c1a1f0e2d')).toBe(false);
    expect(matchFilter(reaction, f, null)).toBe(false);
    expect(matchFilter(reaction, f, 'h-decided')).toBe(true);
    expect(matchFilter(reaction, parsed({ '#h': [channel], '#e': [B] }), 'h-decided')).toBe(false);
  });

  it('matches nothing for empty lists', () => {
    for (const raw of [{ kinds: [] }, { ids: [] }, { authors: [] }, { '#e': [] }]) {
      expect(matchFilter(ev({ tags: [['e', A]] }), parsed(raw))).toBe(false);
    }
  });

  it('treats since and until as inclusive', () => {
    const f = parsed({ since: 1000, until: 1000 });
    expect(matchFilter(ev({ created_at: 1000 }), f)).toBe(true);
    expect(matchFilter(ev({ created_at: 999 }), f)).toBe(false);
    expect(matchFilter(ev({ created_at: 1001 }), f)).toBe(false);
    expect(matchFilter(ev({ created_at: 0 }), parsed({ until: 0 }))).toBe(true);
  });

  it('matches tags positionally on [0] and [1] only', () => {
    const f = parsed({ '#e': [C] });
    expect(matchFilter(ev({ tags: [['e', C]] }), f)).toBe(true);
    expect(matchFilter(ev({ tags: [['e', C, 'wss://relay', 'root']] }), f)).toBe(true);
    expect(matchFilter(ev({ tags: [['p', C]] }), f)).toBe(false);
    expect(matchFilter(ev({ tags: [['e', A, C]] }), f)).toBe(false);
    expect(matchFilter(ev({ tags: [['e']] }), f)).toBe(false);
  });

  it('requires every tag key (AND) and any value within a key (OR)', () => {
    const f = parsed({ '#e': [A, C], '#h': ['room'] });
    expect(matchFilter(ev({ tags: [['e', C], ['h', 'room']] }), f)).toBe(true);
    expect(matchFilter(ev({ tags: [['e', C]] }), f)).toBe(false);
  });

  it('matches multi-letter tag names', () => {
    const f = parsed({ '#buzz-channel': ['x'] });
    expect(matchFilter(ev({ tags: [['buzz-channel', 'x']] }), f)).toBe(true);
    expect(matchFilter(ev({ tags: [['buzz-channel', 'y']] }), f)).toBe(false);
  });

  it('applies the before_id composite cursor', () => {
    const f = parsed({ until: 1000, before_id: B });
    expect(matchFilter(ev({ created_at: 999, id: A }), f)).toBe(true);
    expect(matchFilter(ev({ created_at: 1000, id: C }), f)).toBe(true);
    expect(matchFilter(ev({ created_at: 1000, id: B }), f)).toBe(false);
    expect(matchFilter(ev({ created_at: 1000, id: A }), f)).toBe(false);
    expect(matchFilter(ev({ created_at: 1001, id: C }), f)).toBe(false);
  });

  it('ignores search, limit and extensions', () => {
    expect(matchFilter(ev(), parsed({ search: 'nothing like it', limit: 0, top_level: true }))).toBe(true);
  });

  it('handles long value lists (set-backed) the same as short ones', () => {
    const many = Array.from({ length: 500 }, (_, i) => i.toString(16).padStart(64, '0'));
    const f = parsed({ ids: [...many, A], '#e': [...many, C] });
    expect(matchFilter(ev({ tags: [['e', C]] }), f)).toBe(true);
    expect(matchFilter(ev({ id: B, tags: [['e', C]] }), f)).toBe(false);
    expect(matchFilter(ev({ tags: [['e', B]] }), f)).toBe(false);
  });

  it('agrees with nostr-tools matchFilter on random events and filters', () => {
    let seed = 42;
    const rand = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const pick = <T>(xs: readonly T[]) => xs[Math.floor(rand() * xs.length)];
    const subset = <T>(xs: readonly T[]) => xs.filter(() => rand() < 0.5);
    const hexes = [A, B, C];
    const names = ['e', 'p', 'h'];
    for (let i = 0; i < 2000; i++) {
      const event = ev({
        id: pick(hexes),
        pubkey: pick(hexes),
        kind: pick([1, 9, 40002]),
        created_at: 1 + Math.floor(rand() * 10),
        tags: subset(names).map((n) => [n, pick(hexes)]),
      });
      const raw: Record<string, unknown> = {};
      if (rand() < 0.3) raw.ids = subset(hexes);
      if (rand() < 0.3) raw.authors = subset(hexes);
      if (rand() < 0.3) raw.kinds = subset([1, 9, 40002]);
      if (rand() < 0.3) raw.since = 1 + Math.floor(rand() * 10);
      if (rand() < 0.3) raw.until = 1 + Math.floor(rand() * 10);
      for (const n of names) if (rand() < 0.3) raw[`#${n}`] = subset(hexes);
      expect({ i, raw, match: matchFilter(event, parsed(raw)) }).toEqual({ i, raw, match: nostrToolsMatch(raw as Parameters<typeof nostrToolsMatch>[0], event) });
    }
  });
});

describe('effectiveLimit', () => {
  it.each<[number | undefined, number]>([
    [undefined, 1000],
    [0, 0],
    [5, 5],
    [1000, 1000],
    [5000, 1000],
  ])('limit %p gives %i', (limit, expected) => {
    expect(effectiveLimit(parsed(limit === undefined ? {} : { limit }))).toBe(expected);
  });

  it('honours a custom maximum', () => {
    expect(effectiveLimit(parsed({}), 100)).toBe(100);
    expect(effectiveLimit(parsed({ limit: 500 }), 100)).toBe(100);
  });
});
