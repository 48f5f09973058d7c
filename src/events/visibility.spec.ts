import { NostrEvent } from '../common/nostr.types.js';
import { eventVisibleToReader } from './visibility.js';

const alice = 'a'.repeat(64);
const bob = 'b'.repeat(64);
const ev = (kind: number, pubkey: string, tags: string[][] = []): NostrEvent => ({ id: '0'.repeat(64), pubkey, created_at: 1, kind, tags, content: '', sig: '0'.repeat(128) });

describe('eventVisibleToReader', () => {
  it('shows ordinary kinds to everyone', () => {
    expect(eventVisibleToReader(ev(1, alice), bob)).toBe(true);
  });

  it('shows p-gated kinds to the author and the p-tagged reader only', () => {
    expect(eventVisibleToReader(ev(1059, alice, [['p', bob]]), bob)).toBe(true);
    expect(eventVisibleToReader(ev(1059, alice, [['p', bob]]), alice)).toBe(true);
    expect(eventVisibleToReader(ev(1059, alice, [['p', 'c'.repeat(64)]]), bob)).toBe(false);
  });

  it('shows result-gated kinds only to the p-tagged owner, not even the author', () => {
    expect(eventVisibleToReader(ev(30622, alice, [['p', bob]]), bob)).toBe(true);
    expect(eventVisibleToReader(ev(30622, alice, [['p', bob]]), alice)).toBe(false);
  });

  it('shows author-only kinds to the author only', () => {
    expect(eventVisibleToReader(ev(30300, alice), alice)).toBe(true);
    expect(eventVisibleToReader(ev(30300, alice, [['p', bob]]), bob)).toBe(false);
  });

  it('shows shared-gated kinds to others only with exactly one shared tag', () => {
    expect(eventVisibleToReader(ev(30175, alice, [['shared', 'true']]), bob)).toBe(true);
    expect(eventVisibleToReader(ev(30175, alice), bob)).toBe(false);
    expect(eventVisibleToReader(ev(30175, alice, [['shared', 'true'], ['shared', 'true']]), bob)).toBe(false);
    expect(eventVisibleToReader(ev(30175, alice), alice)).toBe(true);
  });
});
