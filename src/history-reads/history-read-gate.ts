/**
 * The per-pod cap on reader-served history reads (seed 000; database.md §3.4). A FIFO
 * semaphore with `max(1, floor(4n/5))` permits for a reader pool of n connections: the
 * remaining fifth stays free for authorization reads. A read waits at most 1 s for a permit
 * and is otherwise shed. The permit is handed to the reader transaction (ReaderTx), which
 * releases it when it is released or dropped; it bounds history transactions, not connections.
 */
import { Inject, Injectable } from '@nestjs/common';
import type { AppConfig } from '../config/app-config.js';
import { APP_CONFIG } from '../config/config.tokens.js';

/** How long a history read waits for a permit before it is rejected (`history_read_cap`). */
export const HISTORY_PERMIT_WAIT_MS = 1000;

/** Design choice (§3.4): reserve the fifth rounded up, at least one permit. 20 → 16, 24 → 19. */
export function historyReadCap(readerPoolSize: number): number {
  return Math.max(1, Math.floor((4 * readerPoolSize) / 5));
}

/** One admitted history read. Releasing is idempotent. */
export interface HistoryPermit {
  release(): void;
}

interface Waiter {
  grant(permit: HistoryPermit): void;
}

@Injectable()
export class HistoryReadGate {
  readonly capacity: number;
  private available: number;
  private readonly queue: Waiter[] = [];

  constructor(@Inject(APP_CONFIG) config: AppConfig) {
    this.capacity = historyReadCap(config.database.readPoolSize);
    this.available = this.capacity;
  }

  /** Permits currently held. */
  get inUse(): number {
    return this.capacity - this.available;
  }

  /** Reads waiting for a permit, in arrival order. */
  get waiting(): number {
    return this.queue.length;
  }

  /** Resolves with a permit, or with undefined once `waitMs` passed without one (FIFO). */
  acquire(waitMs = HISTORY_PERMIT_WAIT_MS): Promise<HistoryPermit | undefined> {
    if (this.available > 0 && this.queue.length === 0) {
      this.available -= 1;
      return Promise.resolve(this.permit());
    }
    return new Promise((resolve) => {
      const waiter: Waiter = {
        grant: (permit) => {
          clearTimeout(timer);
          resolve(permit);
        },
      };
      const timer = setTimeout(() => {
        const at = this.queue.indexOf(waiter);
        if (at >= 0) this.queue.splice(at, 1);
        resolve(undefined);
      }, waitMs);
      this.queue.push(waiter);
    });
  }

  private permit(): HistoryPermit {
    let held = true;
    return {
      release: () => {
        if (!held) return;
        held = false;
        this.handOff();
      },
    };
  }

  /** A released permit goes straight to the oldest waiter, so a newcomer never overtakes it. */
  private handOff(): void {
    const next = this.queue.shift();
    if (next) next.grant(this.permit());
    else this.available += 1;
  }
}
