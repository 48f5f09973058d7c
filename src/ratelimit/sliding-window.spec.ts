import { SlidingWindowLimiter } from './sliding-window.js';
import { RATE_LIMIT_REFUSALS } from './rate-limit.refusals.js';

describe('SlidingWindowLimiter', () => {
  it('admits up to the limit per window and says when to retry', () => {
    let now = 1_000_000;
    const limiter = new SlidingWindowLimiter(3, 60_000, () => now);
    expect([1, 2, 3].map(() => limiter.hit('a').allowed)).toEqual([true, true, true]);
    expect(limiter.hit('a')).toEqual({ allowed: false, retryAfterSecs: 60 });
    expect(limiter.hit('b').allowed).toBe(true);
    now += 30_500;
    expect(limiter.hit('a')).toEqual({ allowed: false, retryAfterSecs: 30 });
    now += 29_500;
    expect(limiter.hit('a').allowed).toBe(true);
  });

  it('slides rather than resetting at window boundaries', () => {
    let now = 0;
    const limiter = new SlidingWindowLimiter(2, 1000, () => now);
    limiter.hit('k');
    now = 900;
    limiter.hit('k');
    now = 1001;
    expect(limiter.hit('k').allowed).toBe(true);
    expect(limiter.hit('k').allowed).toBe(false);
  });

  it('forgets idle keys', () => {
    let now = 0;
    const limiter = new SlidingWindowLimiter(5, 1000, () => now);
    for (let i = 0; i < 100; i++) limiter.hit(`k${i}`);
    now = 5000;
    limiter.hit('fresh');
    expect(limiter.size).toBe(1);
  });

  it('formats the wire reason', () => {
    expect(RATE_LIMIT_REFUSALS.quotaExceeded(7).wire).toBe('rate-limited: quota exceeded; retry in 7s');
  });
});
