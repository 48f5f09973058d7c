/**
 * Sliding-window-log rate limiting, in process. Each key keeps at most `limit`
 * timestamps, and idle keys are swept, so memory stays bounded by active keys.
 */
export interface RateDecision {
  readonly allowed: boolean;
  /** Whole seconds until the oldest hit leaves the window (0 when allowed). */
  readonly retryAfterSecs: number;
}

export class SlidingWindowLimiter {
  private readonly hits = new Map<string, number[]>();
  private lastSweep = 0;

  constructor(
    private readonly limit: number,
    private readonly windowMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  hit(key: string): RateDecision {
    const t = this.now();
    this.sweep(t);
    const log = this.hits.get(key) ?? [];
    while (log.length > 0 && log[0] <= t - this.windowMs) log.shift();
    if (log.length >= this.limit) {
      this.hits.set(key, log);
      return { allowed: false, retryAfterSecs: Math.max(1, Math.ceil((log[0] + this.windowMs - t) / 1000)) };
    }
    log.push(t);
    this.hits.set(key, log);
    return { allowed: true, retryAfterSecs: 0 };
  }

  get size(): number {
    return this.hits.size;
  }

  private sweep(t: number): void {
    if (t - this.lastSweep < this.windowMs) return;
    this.lastSweep = t;
    for (const [key, log] of this.hits) if (log.length === 0 || log[log.length - 1] <= t - this.windowMs) this.hits.delete(key);
  }
}
