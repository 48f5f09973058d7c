import { NostrFilter } from '../common/nostr.types.js';
import { hasValueIndependentPlan } from './event-read.repository.js';
import { communityWide, ReadScope } from './read-scope.js';

const f = (parts: Partial<NostrFilter>): NostrFilter => ({ tags: {}, extensions: {}, ...parts });
const pk = 'ab'.repeat(32);
const accessible: ReadScope = { communityId: 'c', channels: ['x', 'y'], includeGlobal: true };
const pinned: ReadScope = { communityId: 'c', channels: ['x'], includeGlobal: false };
const twoChannels: ReadScope = { communityId: 'c', channels: ['x', 'y'], includeGlobal: false };

describe('hasValueIndependentPlan', () => {
  it.each([
    ['one kind, accessible channels', accessible, f({ kinds: [1] }), true],
    ['one author, several kinds', accessible, f({ kinds: [1, 7], authors: [pk] }), true],
    ['one id', accessible, f({ ids: [pk] }), true],
    ['one pinned channel, several kinds, #h', pinned, f({ kinds: [9, 7], tags: { h: ['x'] } }), true],
    ['since and until', accessible, f({ kinds: [1], since: 1, until: 2 }), true],
  ])('%s: generic', (_name, scope, filter, expected) => {
    expect(hasValueIndependentPlan(scope, filter)).toBe(expected);
  });

  it.each([
    ['a tag probe on the GIN index', accessible, f({ kinds: [1], tags: { t: ['rare'] } }), false],
    ['#h without a channel scope', communityWide('c'), f({ tags: { h: ['x'] } }), false],
    ['several authors', accessible, f({ authors: [pk, 'cd'.repeat(32)] }), false],
    ['several ids', accessible, f({ ids: [pk, 'cd'.repeat(32)] }), false],
    ['several kinds, no author, not one channel', twoChannels, f({ kinds: [9, 7], tags: { h: ['x', 'y'] } }), false],
  ])('%s: left to the planner', (_name, scope, filter, expected) => {
    expect(hasValueIndependentPlan(scope, filter)).toBe(expected);
  });
});
