import { MAX_TAG_KEYS } from './filter.js';
import { parseClientMessage } from './client-message.js';
import { NostrFilter } from './nostr.types.js';

const A = 'a'.repeat(64);

describe('parseClientMessage (§2.3)', () => {
  const frame = (...parts: unknown[]) => JSON.stringify(parts);
  const filters = (n: number) => Array.from({ length: n }, () => ({ kinds: [9] }));

  it('parses EVENT and AUTH with the payload left for parseEvent', () => {
    const payload = { id: 'x', kind: 1 };
    expect(parseClientMessage(frame('EVENT', payload))).toEqual({ type: 'EVENT', event: payload });
    expect(parseClientMessage(frame('AUTH', payload))).toEqual({ type: 'AUTH', event: payload });
  });

  it('parses REQ and COUNT with their filters', () => {
    expect(parseClientMessage(frame('REQ', 'sub', { kinds: [9] }, { '#h': ['room'] }))).toEqual({
      type: 'REQ',
      subId: 'sub',
      filters: [
        { kinds: [9], tags: {}, extensions: {} },
        { tags: { h: ['room'] }, extensions: {} },
      ],
    });
    expect(parseClientMessage(frame('COUNT', 'c', {}))).toEqual({
      type: 'COUNT',
      subId: 'c',
      filters: [{ tags: {}, extensions: {} }],
    });
  });

  it('parses CLOSE', () => {
    expect(parseClientMessage(frame('CLOSE', 'sub'))).toEqual({ type: 'CLOSE', subId: 'sub' });
  });

  it('keeps per-filter cursors aligned with their filters', () => {
    const msg = parseClientMessage(frame('REQ', 'cursor', { kinds: [9] }, { kinds: [9], until: 1000, before_id: 'ab'.repeat(32) }));
    expect(msg).toMatchObject({ type: 'REQ', filters: [{ kinds: [9] }, { until: 1000, before_id: 'ab'.repeat(32) }] });
    expect((msg as { filters: NostrFilter[] }).filters[0].before_id).toBeUndefined();
  });

  it('accepts exactly 10 filters and a 256-byte sub-id', () => {
    expect(parseClientMessage(frame('REQ', 's', ...filters(10)))).toMatchObject({ type: 'REQ' });
    expect(parseClientMessage(frame('REQ', 'é'.repeat(128), {}))).toMatchObject({ type: 'REQ' });
  });

  it.each<[string, string, string]>([
    ['not JSON', 'not json', 'JSON parse error: '],
    ['a non-array', '{"REQ":1}', 'expected JSON array'],
    ['an empty array', '[]', 'empty array'],
    ['a non-string verb', '[1, "x"]', 'first element must be a string'],
    ['an unknown verb', '["FOO", "x"]', 'unknown message type: FOO'],
    ['EVENT without an object', '["EVENT"]', 'EVENT requires event object'],
    ['EVENT with an array', '["EVENT", []]', 'EVENT requires event object'],
    ['AUTH with a string', '["AUTH", "challenge"]', 'AUTH requires event object'],
    ['REQ without sub-id', '["REQ"]', 'REQ requires sub_id'],
    ['REQ with a numeric sub-id', '["REQ", 1]', 'REQ sub_id must be a string'],
    ['REQ with an empty sub-id', '["REQ", ""]', 'REQ sub_id must not be empty'],
    ['COUNT with an empty sub-id', '["COUNT", ""]', 'COUNT sub_id must not be empty'],
    ['CLOSE without sub-id', '["CLOSE"]', 'CLOSE requires sub_id'],
    ['CLOSE with a non-string', '["CLOSE", 5]', 'CLOSE sub_id must be a string'],
  ])('rejects %s', (_label, text, error) => {
    const msg = parseClientMessage(text);
    expect(msg.type).toBe('INVALID');
    expect((msg as { error: string }).error.startsWith(error)).toBe(true);
    if (!error.endsWith(': ')) expect((msg as { error: string }).error).toBe(error);
  });

  it('names the sub-id when only the filters of a REQ or COUNT were refused', () => {
    const tooMany = Object.fromEntries(Array.from({ length: 9 }, (_, i) => [`#k${i}`, ['a']]));
    expect(parseClientMessage(frame('REQ', 'wide', tooMany))).toEqual({
      type: 'INVALID',
      error: `invalid filter: filter has 9 tag keys, maximum is ${MAX_TAG_KEYS}`,
      subId: 'wide',
    });
    expect(parseClientMessage(frame('COUNT', 'c', ...filters(11)))).toEqual({ type: 'INVALID', error: 'COUNT contains 11 filters, maximum is 10', subId: 'c' });
  });

  it('rejects an oversized sub-id counted in UTF-8 bytes', () => {
    expect(parseClientMessage(frame('REQ', 'x'.repeat(257)))).toEqual({
      type: 'INVALID',
      error: 'REQ sub_id exceeds maximum length of 256 bytes',
    });
    expect(parseClientMessage(frame('COUNT', '€'.repeat(86)))).toEqual({
      type: 'INVALID',
      error: 'COUNT sub_id exceeds maximum length of 256 bytes',
    });
  });

  it('rejects more than 10 filters with the spec wording', () => {
    expect(parseClientMessage(frame('REQ', 's', ...filters(11)))).toEqual({
      type: 'INVALID',
      error: 'REQ contains 11 filters, maximum is 10',
      subId: 's',
    });
    expect(parseClientMessage(frame('COUNT', 's', ...filters(11)))).toEqual({
      type: 'INVALID',
      error: 'COUNT contains 11 filters, maximum is 10',
      subId: 's',
    });
  });

  it('prefixes filter errors with "invalid filter: " and sends cursor errors bare', () => {
    expect(parseClientMessage(frame('REQ', 's', { kinds: ['9'] }))).toEqual({
      type: 'INVALID',
      error: 'invalid filter: kinds must be an array of integers between 0 and 65535',
      subId: 's',
    });
    expect(parseClientMessage(frame('COUNT', 's', { '#e': ['\u0000'] }))).toEqual({
      type: 'INVALID',
      error: 'invalid filter: #e contains a NUL character (U+0000)',
      subId: 's',
    });
    expect(parseClientMessage(frame('REQ', 's', { before_id: A }))).toEqual({
      type: 'INVALID',
      error: 'before_id requires until to be set',
      subId: 's',
    });
    expect(parseClientMessage(frame('COUNT', 's', { until: 1, before_id: 'short' }))).toEqual({
      type: 'INVALID',
      error: 'before_id must be a 64-char hex event id',
      subId: 's',
    });
  });
});
