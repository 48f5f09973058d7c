import { NostrFilter } from '../nostr/nostr.types.js';
import { allStatementsGeneric, hasValueIndependentPlan } from './event-read.queries.js';
import { communityWide, ReadScope } from '../channels/read-scope.js';

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

describe('allStatementsGeneric (the proved reader transaction then plans generically)', () => {
  it.each([
    ['one kind', accessible, f({ kinds: [1] }), 0, true],
    ['a tag page: the event_tags walk', accessible, f({ kinds: [1], tags: { t: ['rare'] } }), 0, true],
    ['a tag page with an author: the walk and its GIN fallback', accessible, f({ kinds: [1], authors: [pk], tags: { t: ['rare'] } }), 0, true],
    ['one pinned channel, #h', pinned, f({ kinds: [9], tags: { h: ['x'] } }), 0, true],
    ['a tag page with an offset (left to the planner)', accessible, f({ kinds: [1], tags: { t: ['rare'] } }), 20, false],
    ['#e (event_refs, unmarked)', accessible, f({ kinds: [7], tags: { e: [pk] } }), 0, false],
    ['#e beside a GIN tag', accessible, f({ kinds: [7], tags: { e: [pk], t: ['x'] } }), 0, false],
    ['several authors', accessible, f({ authors: [pk, 'cd'.repeat(32)] }), 0, false],
  ])('%s', (_name, scope, filter, offset, expected) => {
    expect(allStatementsGeneric(scope, filter, offset)).toBe(expected);
  });
});
