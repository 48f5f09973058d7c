import { MemoryBudget, MemoryPool, MemoryRefusedError } from './memory-budget.js';

describe('MemoryPool', () => {
  it('refuses a key past its share while other keys are still served, and the pool past its limit', () => {
    const pool = new MemoryPool('filters', 1000, 25);
    expect(pool.keyLimit).toBe(250);
    expect(pool.take(200, 'a')).toBeUndefined();
    expect(pool.take(100, 'a')).toBe('key');
    expect(pool.take(250, 'b')).toBeUndefined();
    expect(pool.take(250, 'c')).toBeUndefined();
    expect(pool.take(250, 'd')).toBeUndefined();
    expect(pool.take(100, 'e')).toBe('process');
    expect(pool.available('a')).toBe(50);
    pool.release(200, 'a');
    expect(pool.available('e')).toBe(250);
    expect(pool.inUse).toBe(750);
  });

  it('keeps the top of a reserved pool for keys that hold little of it', () => {
    const pool = new MemoryPool('filters', 1000, 25, undefined, { bytes: 200, keyFloor: 10 });
    for (const key of ['a', 'b', 'c']) expect(pool.take(250, key)).toBeUndefined();
    expect(pool.available('d')).toBe(50);
    expect(pool.take(60, 'd')).toBe('key');
    expect(pool.take(50, 'd')).toBeUndefined();
    // 800 in use: the rest is the reserve, which 'd' (holding 50) may not take.
    expect(pool.available('d')).toBe(0);
    expect(pool.take(1, 'd')).toBe('key');
    expect(pool.available('e')).toBe(10);
    expect(pool.take(10, 'e')).toBeUndefined();
    expect(pool.take(1, 'e')).toBe('key');
    for (const key of 'fghijklmnopqrstuvwx') expect(pool.take(10, key)).toBeUndefined();
    expect(pool.take(1, 'y')).toBe('process');
  });

  it('settles a lease down to what was used, or up past the pool for memory already in use', () => {
    const pool = new MemoryPool('history', 1000, 100);
    const lease = pool.lease(600, 'a');
    if (typeof lease === 'string') throw new Error(lease);
    lease.settle(100);
    expect(pool.inUse).toBe(100);
    lease.grow(5000);
    expect(lease.bytes).toBe(1000);
    lease.settle(1500);
    expect(pool.inUse).toBe(1500);
    expect(pool.available()).toBe(0);
    lease.end();
    expect(pool.inUse).toBe(0);
  });

  it('wakes a waiter when memory is given back', async () => {
    const pool = new MemoryPool('history', 100, 100);
    expect(pool.take(100)).toBeUndefined();
    const woken = pool.released(60_000).then(() => pool.available());
    pool.release(40);
    await expect(woken).resolves.toBe(40);
  });
});

describe('MemoryBudget', () => {
  it('divides the budget between the kinds, an operator-set output limit aside', () => {
    const budget = new MemoryBudget(1000, 25, undefined, { output: 123 });
    expect(Object.fromEntries(Object.entries(budget.pools).map(([k, p]) => [k, p.limit]))).toEqual({ output: 123, history: 300, filters: 300, auth_hold: 100 });
  });

  it('reserves the last 20 % of the filters pool for keys holding at most 1 % of it, unless shares are off', () => {
    const filters = new MemoryBudget(100_000, 25).pool('filters');
    for (const key of ['a', 'b', 'c']) expect(filters.take(7_500, key)).toBeUndefined();
    expect(filters.take(1_500, 'd')).toBeUndefined();
    expect(filters.take(1, 'd')).toBe('key');
    expect(filters.take(300, 'e')).toBeUndefined();
    expect(filters.take(1, 'e')).toBe('key');
    const unfair = new MemoryBudget(100_000, 100).pool('filters');
    expect(unfair.take(30_000, 'a')).toBeUndefined();
  });

  it('refusals carry the wire reason and the HTTP answer', () => {
    const full = new MemoryRefusedError('history', 'process');
    expect([full.message, full.status, full.body, full.retryAfterSecs]).toEqual(['error: relay memory budget full, retry later', 503, { error: 'relay memory budget full, retry later' }, 1]);
    const share = new MemoryRefusedError('history', 'key');
    expect([share.status, share.message, share.body]).toEqual([429, 'rate-limited: this key holds its share of the relay memory budget, retry later', { error: share.message }]);
  });
});
