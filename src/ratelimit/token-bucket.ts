/**
 * Token buckets, in process: each key holds up to `burst` tokens, refilled at
 * `ratePerSec`; a hit takes one. A client idle for a while (a new connection)
 * may spend the whole burst at once, and over any longer span it gets no more
 * than the burst plus the sustained rate. A key whose bucket would have refilled
 * is the same as an absent one, so idle keys are swept and memory stays bounded
 * by active keys.
 */
import type { RateDecision } from './sliding-window.js';

interface BucketState {
  tokens: number;
  at: number;
}

export class TokenBucketLimiter {
  private readonly buckets = new Map<string, BucketState>();
  private lastSweep = 0;
  /** How long an empty bucket takes to fill again. */
  private readonly refillMs: number;

  constructor(
    private readonly ratePerSec: number,
    private readonly burst: number,
    private readonly now: () => number = Date.now,
  ) {
    this.refillMs = (burst / ratePerSec) * 1000;
  }

  hit(key: string): RateDecision {
    const t = this.now();
    this.sweep(t);
    const state = this.buckets.get(key);
    const tokens = state === undefined ? this.burst : Math.min(this.burst, state.tokens + ((t - state.at) * this.ratePerSec) / 1000);
    if (tokens < 1) {
      this.buckets.set(key, { tokens, at: t });
      return { allowed: false, retryAfterSecs: Math.max(1, Math.ceil((1 - tokens) / this.ratePerSec)) };
    }
    this.buckets.set(key, { tokens: tokens - 1, at: t });
    return { allowed: true, retryAfterSecs: 0 };
  }

  get size(): number {
    return this.buckets.size;
  }

  private sweep(t: number): void {
    if (t - this.lastSweep < this.refillMs) return;
    this.lastSweep = t;
    for (const [key, state] of this.buckets) if (t - state.at >= this.refillMs) this.buckets.delete(key);
  }
}
