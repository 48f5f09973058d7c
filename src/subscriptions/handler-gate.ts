import { Inject, Injectable } from '@nestjs/common';
import type { AppConfig } from '../config/app-config.js';
import { APP_CONFIG } from '../config/config.tokens.js';

export const TOO_MANY_CONCURRENT = 'rate-limited: too many concurrent requests';

/**
 * The global EVENT/REQ/COUNT handler budget (`BUZZ_MAX_CONCURRENT_HANDLERS`); never waits.
 *
 * Design choice (issue 17: writes never fail because of a storm): REQ and COUNT together hold at
 * most the budget, and EVENT may use a further eighth of it (at least one slot) that reads
 * never take. In a reconnect storm every client's REQ holds a slot while its history waits its
 * turn; with one shared budget, 5,000 clients took every slot and the publisher's EVENTs were
 * refused with `rate-limited: too many concurrent requests`. Carving the reserve out of the
 * budget instead refused 105 of 1,000 storm clients at the default of 1,024.
 */
@Injectable()
export class HandlerGate {
  private active = 0;
  private reads = 0;
  /** Slots EVENT may use: the budget and the reserve above it. */
  readonly eventCapacity: number;

  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {
    this.eventCapacity = eventHandlerCapacity(config.limits.maxConcurrentHandlers);
  }

  /** Handlers running now (graceful shutdown waits for this to reach 0). */
  get inFlight(): number {
    return this.active;
  }

  /** Runs an EVENT handler if a slot is free, the reserve included; says so without running it when none is. */
  async run<T>(fn: () => Promise<T>): Promise<{ admitted: true; value: T } | { admitted: false }> {
    if (this.active >= this.eventCapacity) return { admitted: false };
    this.active += 1;
    try {
      return { admitted: true, value: await fn() };
    } finally {
      this.active -= 1;
    }
  }

  /** Runs a REQ or COUNT handler if the reads in flight and all handlers are both under the budget. */
  async runRead<T>(fn: () => Promise<T>): Promise<{ admitted: true; value: T } | { admitted: false }> {
    const max = this.config.limits.maxConcurrentHandlers;
    if (this.reads >= max || this.active >= max) return { admitted: false };
    this.active += 1;
    this.reads += 1;
    try {
      return { admitted: true, value: await fn() };
    } finally {
      this.active -= 1;
      this.reads -= 1;
    }
  }
}

/** The budget and an eighth more (rounded down, at least one): 1024 → 1152. */
export function eventHandlerCapacity(max: number): number {
  return max + Math.max(1, Math.floor(max / 8));
}
