import { TokenBucketLimiter } from './token-bucket.js';

describe('TokenBucketLimiter', () => {
  it('admits the whole burst at once, then the sustained rate', () => {
    let now = 1_000_000;
    const limiter = new TokenBucketLimiter(10, 30, () => now);
    expect(Array.from({ length: 30 }, () => limiter.hit('a').allowed).every(Boolean)).toBe(true);
    expect(limiter.hit('a')).toEqual({ allowed: false, retryAfterSecs: 1 });
    expect(limiter.hit('b').allowed).toBe(true);
    // One second refills ten tokens, not the burst.
    now += 1000;
    expect(Array.from({ length: 11 }, () => limiter.hit('a').allowed)).toEqual([...Array(10).fill(true), false]);
  });

  it('keeps the sustained rate over a long flood', () => {
    let now = 0;
    const limiter = new TokenBucketLimiter(10, 30, () => now);
    let admitted = 0;
    for (let ms = 0; ms < 10_000; ms += 10) {
      now = ms;
      for (let i = 0; i < 5; i++) if (limiter.hit('k').allowed) admitted += 1;
    }
    // 10 s at 10/s plus one burst, never more.
    expect(admitted).toBeLessThanOrEqual(30 + 100);
    expect(admitted).toBeGreaterThanOrEqual(30 + 99);
  });

  it('never refills past the burst and forgets idle keys', () => {
    let now = 0;
    const limiter = new TokenBucketLimiter(5, 5, () => now);
    for (let i = 0; i < 100; i++) limiter.hit(`k${i}`);
    now = 60_000;
    expect(Array.from({ length: 6 }, () => limiter.hit('k1').allowed)).toEqual([true, true, true, true, true, false]);
    expect(limiter.size).toBe(1);
  });
});
