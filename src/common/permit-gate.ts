/**
 * A FIFO counting semaphore whose waits are bounded: `acquire(waitMs)` resolves with a permit,
 * or with undefined once `waitMs` passed without one. A released permit goes straight to the
 * oldest waiter, so a newcomer never overtakes a read that has been waiting.
 */

/** One admitted unit of work. Releasing is idempotent. */
export interface Permit {
  release(): void;
}

interface Waiter {
  grant(permit: Permit): void;
}

export class PermitGate {
  private available: number;
  private readonly queue: Waiter[] = [];

  constructor(readonly capacity: number) {
    if (!Number.isSafeInteger(capacity) || capacity < 1) throw new RangeError(`a permit gate needs at least one permit, got ${capacity}`);
    this.available = capacity;
  }

  /** Permits currently held. */
  get inUse(): number {
    return this.capacity - this.available;
  }

  /** Callers waiting for a permit, in arrival order. */
  get waiting(): number {
    return this.queue.length;
  }

  acquire(waitMs: number): Promise<Permit | undefined> {
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

  private permit(): Permit {
    let held = true;
    return {
      release: () => {
        if (!held) return;
        held = false;
        this.handOff();
      },
    };
  }

  private handOff(): void {
    const next = this.queue.shift();
    if (next) next.grant(this.permit());
    else this.available += 1;
  }
}
