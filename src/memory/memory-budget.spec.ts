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

  it('refusals carry the wire reason and the HTTP answer', () => {
    const full = new MemoryRefusedError('history', 'process');
    expect([full.message, full.status, full.body, full.retryAfterSecs]).toEqual(['error: relay memory budget full, retry later', 503, { error: 'relay memory budget full, retry later' }, 1]);
    const share = new MemoryRefusedError('history', 'key');
    expect([share.status, share.message.startsWith('rate-limited: ')]).toEqual([429, true]);
  });
});
