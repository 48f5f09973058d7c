/**
 * Turns on the event loop for bulk output: history pages and live fan-out. In a reconnect storm
 * one shared history read resolves for a thousand waiting subscriptions at once; if each encoded
 * and sent its whole page in the same microtask drain, the event loop would read no socket for
 * hundreds of milliseconds and an `EVENT` arriving meanwhile would wait that long for its `OK`
 * (docs/adr/0001-writes-through-a-reconnect-storm.md).
 *
 * So bulk output queues here, one synchronous piece of work per task (a subscription's page, or
 * one live event for one connection), first come first served. Tasks run in a `setImmediate`
 * callback until it has used SLICE_MS; then the rest wait for the next turn, so between slices
 * the event loop polls sockets and runs timers: an incoming `EVENT`, `AUTH` or `REQ` frame waits
 * for at most one slice, not for every page. A task must flush what it sent (the write is part of
 * its cost) and must not throw: what it returns resolves the caller's promise.
 *
 * The WebSocket adapter keeps a second queue of its own for completing upgrades (RelayWsAdapter),
 * so opening connections and bulk output each get a slice per turn and neither waits behind the other.
 */
/** Event-loop time one turn of bulk output may use before the loop polls again. */
export const SLICE_MS = 5;

interface Task {
  readonly work: () => unknown;
  readonly resolve: (value: unknown) => void;
  readonly reject: (err: unknown) => void;
}

/** One per process (SubscriptionsModule provides it with the defaults). */
export class OutputTurns {
  private queue: Task[] = [];
  private head = 0;
  private scheduled = false;

  constructor(
    private readonly sliceMs: number = SLICE_MS,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Tasks waiting for a turn. */
  get waiting(): number {
    return this.queue.length - this.head;
  }

  /** Runs `work` in a later turn, after every task queued before it; resolves with its result. */
  run<T>(work: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ work, resolve: resolve as (value: unknown) => void, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => this.drain());
  }

  private drain(): void {
    this.scheduled = false;
    const until = this.now() + this.sliceMs;
    do {
      const task = this.queue[this.head];
      this.queue[this.head++] = undefined as unknown as Task;
      try {
        task.resolve(task.work());
      } catch (err) {
        task.reject(err);
      }
    } while (this.head < this.queue.length && this.now() < until);
    if (this.head === this.queue.length) {
      this.queue = [];
      this.head = 0;
    } else {
      if (this.head > 1024 && this.head * 2 > this.queue.length) {
        this.queue = this.queue.slice(this.head);
        this.head = 0;
      }
      this.schedule();
    }
  }
}
