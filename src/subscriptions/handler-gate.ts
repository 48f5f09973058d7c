import { Inject, Injectable } from '@nestjs/common';
import type { AppConfig } from '../config/app-config.js';
import { APP_CONFIG } from '../config/config.tokens.js';

export const TOO_MANY_CONCURRENT = 'rate-limited: too many concurrent requests';

/** The global EVENT/REQ/COUNT handler budget (`BUZZ_MAX_CONCURRENT_HANDLERS`); never waits. */
@Injectable()
export class HandlerGate {
  private active = 0;

  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {}

  /** Handlers running now (graceful shutdown waits for this to reach 0). */
  get inFlight(): number {
    return this.active;
  }

  /** Runs fn if a slot is free; says so without running it when none is. */
  async run<T>(fn: () => Promise<T>): Promise<{ admitted: true; value: T } | { admitted: false }> {
    if (this.active >= this.config.limits.maxConcurrentHandlers) return { admitted: false };
    this.active += 1;
    try {
      return { admitted: true, value: await fn() };
    } finally {
      this.active -= 1;
    }
  }
}
