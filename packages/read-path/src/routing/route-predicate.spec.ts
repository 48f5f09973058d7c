import { BOUNDED, forQuery, fromChannelCursor } from './route-predicate.js';

const CH = '11111111-1111-4111-8111-111111111111';

describe('route predicates', () => {
  it('for_query_predicate_truth_table', () => {
    expect(forQuery({ channelId: CH, until: 100 }, false)).toBe(BOUNDED);
    expect(forQuery({ channelId: CH, until: 100 }, true)).toMatchObject({ kind: 'bounded_or_covered', upperMs: 100_000 });
    expect(forQuery({ channelId: CH }, true)).toBe(BOUNDED);
    expect(forQuery({ until: 100 }, true)).toBe(BOUNDED);
    expect(forQuery({}, true)).toBe(BOUNDED);
  });

  it('channel_cursor_predicate_is_not_budget_gated', () => {
    expect(fromChannelCursor(CH, 100)).toMatchObject({ kind: 'covered', upperMs: 100_000 });
    expect(fromChannelCursor(CH, undefined)).toBe(BOUNDED);
  });
});
