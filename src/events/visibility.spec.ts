import { NostrEvent } from '../nostr/nostr.types.js';
import { compileSql } from './event-sql.js';
import { VISIBILITY_GATED_KINDS } from '../nostr/kinds.js';
import { eventVisibleToReader, visibilityFragment } from './visibility.js';

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

  it('shows engrams to the agent and its p-tagged owner only', () => {
    expect(eventVisibleToReader(ev(30174, alice, [['p', bob]]), alice)).toBe(true);
    expect(eventVisibleToReader(ev(30174, alice, [['p', bob]]), bob)).toBe(true);
    expect(eventVisibleToReader(ev(30174, alice, [['p', bob]]), 'c'.repeat(64))).toBe(false);
  });

  it('shows reports to nobody, not even their author', () => {
    expect(eventVisibleToReader(ev(1984, alice, [['p', bob]]), alice)).toBe(false);
    expect(eventVisibleToReader(ev(1984, alice, [['p', bob]]), bob)).toBe(false);
  });

  it('checks p and shared tags by position', () => {
    expect(eventVisibleToReader(ev(1059, alice, [['x', 'p', bob]]), bob)).toBe(false);
    expect(eventVisibleToReader(ev(30175, alice, [['true', 'shared']]), bob)).toBe(false);
  });
});

describe('visibilityFragment', () => {
  const text = (kinds?: number[]) => (f => f && compileSql(f).text)(visibilityFragment(bob, kinds, 'e.'));

  it('adds nothing for a read that can match no gated kind', () => {
    expect(visibilityFragment(bob, [9, 40002])).toBeUndefined();
    expect(visibilityFragment(bob, [])).toBeUndefined();
  });

  it('names only the gated kinds the read can match', () => {
    expect(text([9, 1984])).toBe("(case when e.kind = any('{1984}'::int[]) then false else true end)");
    expect(text([1059])).toContain("when e.kind = any('{1059}'::int[]) then (e.pubkey = $1 or exists");
  });

  it('covers every gated kind when the read names no kinds', () => {
    const all = text()!;
    for (const kind of VISIBILITY_GATED_KINDS) expect(all).toMatch(new RegExp(`[{,]${kind}[,}]`));
  });
});
