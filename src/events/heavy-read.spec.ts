import { randomBytes } from 'node:crypto';
import { NostrFilter } from '../nostr/nostr.types.js';
import { heavyRead } from './event-query.service.js';
import { parseFilter } from '../nostr/filter.js';

function parsed(raw: unknown): NostrFilter {
  const result = parseFilter(raw);
  if (!result.ok) throw new Error(result.reason);
  return result.filter;
}

const hex = (n: number) => Array.from({ length: n }, () => randomBytes(32).toString('hex'));

describe('heavyRead', () => {
  it('is a filter of more than 64 values: tags, authors or ids, with or without kinds', () => {
    expect(heavyRead(parsed({ '#e': hex(64) }))).toBe(false);
    expect(heavyRead(parsed({ '#e': hex(65) }))).toBe(true);
    expect(heavyRead(parsed({ '#t': ['a'], '#p': hex(64) }))).toBe(true);
    expect(heavyRead(parsed({ kinds: [9, 39000], authors: hex(100) }))).toBe(true);
  });

  it('is not a lookup of addressable events: group state by #d for many channels', () => {
    expect(heavyRead(parsed({ kinds: [39000, 39001, 39002], '#d': Array.from({ length: 200 }, (_, i) => `channel-${i}`) }))).toBe(false);
  });
});
