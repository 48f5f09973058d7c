import { Inject, Injectable, Optional } from '@nestjs/common';
import { shareOf } from '@buzz-relay/read-path/internal';
import type { AppConfig } from '../config/app-config.js';
import { APP_CONFIG } from '../config/config.tokens.js';
import { RelayMetrics } from '../metrics/relay-metrics.service.js';
import type { Refusal } from '../nostr/refusal.js';
import { WS_REFUSALS } from './ws.refusals.js';

export type HandlerOutcome<T> = { admitted: true; value: T } | { admitted: false; refusal: 'share' | 'capacity' };

/** The CLOSED / OK refusal of a handler the gate did not admit. */
export function handlerRefusal(refusal: 'share' | 'capacity'): Refusal {
  return refusal === 'share' ? WS_REFUSALS.tooManyConcurrentForKey : WS_REFUSALS.tooManyConcurrent;
}

/** A REQ that finds the budget full waits this long for a slot before it is refused. */
export const HANDLER_WAIT_MS = 10_000;
/** REQs that may wait for a slot at once: this many times the budget (past it they are refused at once). */
export const HANDLER_WAITING_PER_SLOT = 4;

/** How a read takes the budget: `refuse` (COUNT) is refused when it is full, `wait` (REQ) waits its turn. */
export type ReadAdmission = 'refuse' | 'wait';

interface Waiting {
  admit(): void;
}

/**
 * The global EVENT/REQ/COUNT handler budget (`BUZZ_MAX_CONCURRENT_HANDLERS`). EVENT and COUNT
 * never wait; a REQ that finds the budget full waits its turn (below).
 *
 * Design choice (writes never fail because of a storm): REQ and COUNT together hold at most the
 * budget, and EVENT may use a further eighth of it (at least one slot) that reads never take. In
 * a reconnect storm every client's REQ holds a slot while its history waits its turn; with one
 * shared budget a large storm takes every slot and the publisher's EVENTs are refused with
 * `rate-limited: too many concurrent requests`. The reserve sits on top of the budget rather than
 * inside it, so reads keep the whole budget (docs/adr/0001-writes-through-a-reconnect-storm.md).
 *
 * One key's REQ and COUNT handlers hold at most its share of the budget (BUZZ_KEY_SHARE_PERCENT),
 * so a key with many sockets cannot take every slot; the next one is refused at once with
 * `rate-limited: too many concurrent requests for this key`. EVENT needs no share: the per-key
 * message quota already bounds how many a key can have in flight.
 *
 * A REQ that finds the reads at the budget waits, first come first served, for at most
 * HANDLER_WAIT_MS, with at most HANDLER_WAITING_PER_SLOT × the budget waiting; past either it is
 * refused as before. Clients do not retry `rate-limited:`, so in a reconnect storm of more
 * clients than the budget a refused REQ was a client left without history, while what a waiting
 * REQ holds is bounded already: its filters are reserved from the memory budget and its
 * subscription claimed (so live events reach it meanwhile) before it asks for a slot. A waiting
 * REQ counts toward its key's share, so one key cannot fill the queue.
 */
@Injectable()
export class HandlerGate {
  private active = 0;
  private reads = 0;
  private readonly readsByKey = new Map<string, number>();
  private waiting: Waiting[] = [];
  /** Slots EVENT may use: the budget and the reserve above it. */
  readonly eventCapacity: number;
  /** Read handlers one key may run at once. */
  readonly keyShare: number;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Optional() private readonly metrics?: RelayMetrics,
  ) {
    this.eventCapacity = eventHandlerCapacity(config.limits.maxConcurrentHandlers);
    this.keyShare = shareOf(config.limits.maxConcurrentHandlers, config.limits.keySharePercent);
  }

  /** Handlers running or waiting now (graceful shutdown waits for this to reach 0). */
  get inFlight(): number {
    return this.active + this.waiting.length;
  }

  /** REQs waiting for a slot now. */
  get waitingReads(): number {
    return this.waiting.length;
  }

  /** Runs an EVENT handler if a slot is free, the reserve included; says so without running it when none is. */
  async run<T>(fn: () => Promise<T>): Promise<HandlerOutcome<T>> {
    if (this.active >= this.eventCapacity) return this.refused('capacity');
    this.active += 1;
    try {
      return { admitted: true, value: await fn() };
    } finally {
      this.active -= 1;
      this.admitWaiting();
    }
  }

  /**
   * Runs a REQ or COUNT handler of `key` if the key is under its share and the reads in flight
   * and all handlers are both under the budget; with `wait`, a full budget is waited for (FIFO,
   * bounded in time and number) instead of refused.
   */
  async runRead<T>(fn: () => Promise<T>, key?: string, admission: ReadAdmission = 'refuse'): Promise<HandlerOutcome<T>> {
    const held = key === undefined ? 0 : (this.readsByKey.get(key) ?? 0);
    if (key !== undefined && held >= this.keyShare) return this.refused('share');
    if (!this.hasReadSlot()) {
      if (admission === 'refuse' || this.waiting.length >= HANDLER_WAITING_PER_SLOT * this.config.limits.maxConcurrentHandlers) return this.refused('capacity');
      if (key !== undefined) this.readsByKey.set(key, held + 1);
      const admitted = await this.waitForSlot();
      if (!admitted) {
        if (key !== undefined) this.releaseKey(key);
        return this.refused('capacity');
      }
    } else {
      if (key !== undefined) this.readsByKey.set(key, held + 1);
      this.active += 1;
      this.reads += 1;
    }
    try {
      return { admitted: true, value: await fn() };
    } finally {
      this.active -= 1;
      this.reads -= 1;
      if (key !== undefined) this.releaseKey(key);
      this.admitWaiting();
    }
  }

  private hasReadSlot(): boolean {
    const max = this.config.limits.maxConcurrentHandlers;
    return this.reads < max && this.active < max;
  }

  /** Resolves true once a slot was taken for this read (counted), false at the deadline. */
  private waitForSlot(): Promise<boolean> {
    return new Promise<boolean>((resolve) => {
      const entry: Waiting = {
        admit: () => {
          clearTimeout(timer);
          this.active += 1;
          this.reads += 1;
          resolve(true);
        },
      };
      const timer = setTimeout(() => {
        const i = this.waiting.indexOf(entry);
        if (i >= 0) this.waiting.splice(i, 1);
        this.metrics?.handlerWaiting.dec();
        resolve(false);
      }, HANDLER_WAIT_MS);
      timer.unref();
      this.waiting.push(entry);
      this.metrics?.handlerWaiting.inc();
    });
  }

  /** Gives freed slots to waiting reads, oldest first. */
  private admitWaiting(): void {
    while (this.waiting.length > 0 && this.hasReadSlot()) {
      const next = this.waiting.shift()!;
      this.metrics?.handlerWaiting.dec();
      next.admit();
    }
  }

  private releaseKey(key: string): void {
    const n = (this.readsByKey.get(key) ?? 1) - 1;
    if (n > 0) this.readsByKey.set(key, n);
    else this.readsByKey.delete(key);
  }

  private refused(refusal: 'share' | 'capacity'): { admitted: false; refusal: 'share' | 'capacity' } {
    this.metrics?.handlerRefusals.inc({ reason: refusal });
    return { admitted: false, refusal };
  }
}

/** The budget and an eighth more (rounded down, at least one): 1024 → 1152. */
export function eventHandlerCapacity(max: number): number {
  return max + Math.max(1, Math.floor(max / 8));
}
