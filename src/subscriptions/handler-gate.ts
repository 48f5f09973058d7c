import { Inject, Injectable } from '@nestjs/common';
import type { AppConfig } from '../config/app-config.js';
import { APP_CONFIG } from '../config/config.tokens.js';

export const TOO_MANY_CONCURRENT = 'rate-limited: too many concurrent requests';

/**
 * The global EVENT/REQ/COUNT handler budget (`BUZZ_MAX_CONCURRENT_HANDLERS`); never waits.
 *
 * Reads (REQ, COUNT) may hold all of it but an eighth (at least one slot when the budget is two
 * or more), which only EVENT may use: in a reconnect storm a thousand REQs can each hold a slot
 * while their history waits its turn, and a write must still be admitted (issue 17: writes never
 * fail because of a storm). Measured: with 5,000 clients, every slot went to REQs and the
 * publisher's EVENTs were refused with `rate-limited: too many concurrent requests`.
 */
@Injectable()
export class HandlerGate {
  private active = 0;
  /** Slots reads may hold; the rest are kept for EVENT. */
  readonly readCapacity: number;

  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {
    this.readCapacity = readHandlerCapacity(config.limits.maxConcurrentHandlers);
  }

  /** Handlers running now (graceful shutdown waits for this to reach 0). */
  get inFlight(): number {
    return this.active;
  }

  /** Runs an EVENT handler if any slot is free; says so without running it when none is. */
  run<T>(fn: () => Promise<T>): Promise<{ admitted: true; value: T } | { admitted: false }> {
    return this.admit(this.config.limits.maxConcurrentHandlers, fn);
  }

  /** Runs a REQ or COUNT handler if a slot outside the EVENT reserve is free. */
  runRead<T>(fn: () => Promise<T>): Promise<{ admitted: true; value: T } | { admitted: false }> {
    return this.admit(this.readCapacity, fn);
  }

  private async admit<T>(limit: number, fn: () => Promise<T>): Promise<{ admitted: true; value: T } | { admitted: false }> {
    if (this.active >= limit) return { admitted: false };
    this.active += 1;
    try {
      return { admitted: true, value: await fn() };
    } finally {
      this.active -= 1;
    }
  }
}

/** All slots but an eighth (rounded down, at least one) for budgets of two or more: 1024 → 896. */
export function readHandlerCapacity(max: number): number {
  return max < 2 ? max : max - Math.max(1, Math.floor(max / 8));
}
