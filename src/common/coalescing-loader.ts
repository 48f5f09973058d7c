/**
 * Coalesces lookups that many callers repeat at once (authorization reads in a reconnect storm).
 *
 * - One load in flight per key: a caller that asks for a key already queued or running gets that
 *   load's outcome, its value or its error. Nothing is kept after a load settles, so a failure is
 *   never cached and the next caller starts a new load.
 * - Keys asked for in the same turn of the event loop, and keys that arrive while every load slot
 *   is busy, are loaded together: one `load` call (one statement) answers up to `maxBatch` keys.
 *   At most `maxConcurrent` loads run at once, so a burst of distinct keys costs a few statements
 *   on a few connections instead of one connection per key.
 *
 * A caller that joins a running load may get an answer read up to that load's running time
 * before it asked; `fresh` callers only join a load that has not started, so they see every
 * change committed before they asked.
 */

export interface CoalescingLoaderOptions<R, V> {
  /** The identity of a request: equal keys share one load. */
  readonly keyOf: (request: R) => string;
  /** Answers every request of a batch, by key; a key left out of the map fails its callers. */
  readonly load: (batch: readonly R[]) => Promise<ReadonlyMap<string, V>>;
  /** Most keys per load (1: no batching, single flight only). */
  readonly maxBatch: number;
  /** Most loads running at once. */
  readonly maxConcurrent: number;
}

interface Flight<R, V> {
  readonly request: R;
  readonly promise: Promise<V>;
  resolve(value: V): void;
  reject(err: unknown): void;
}

export class CoalescingLoader<R, V> {
  private queued = new Map<string, Flight<R, V>>();
  private readonly running = new Map<string, Flight<R, V>>();
  private active = 0;
  private pumpScheduled = false;

  constructor(private readonly options: CoalescingLoaderOptions<R, V>) {
    if (!(options.maxBatch >= 1) || !(options.maxConcurrent >= 1)) throw new RangeError('a coalescing loader needs maxBatch and maxConcurrent of at least 1');
  }

  get(request: R, opts: { fresh?: boolean } = {}): Promise<V> {
    const key = this.options.keyOf(request);
    const joined = this.queued.get(key) ?? (opts.fresh ? undefined : this.running.get(key));
    if (joined) return joined.promise;
    const flight = newFlight<R, V>(request);
    this.queued.set(key, flight);
    this.schedulePump();
    return flight.promise;
  }

  /**
   * Detaches the running loads whose key matches: their callers keep their answer, later callers
   * start a new load (a change just committed must not be answered from a load that predates it).
   */
  forget(matches: (key: string) => boolean): void {
    for (const key of [...this.running.keys()]) if (matches(key)) this.running.delete(key);
  }

  /** Keys queued or loading: lets tests and metrics see coalescing at work. */
  get pending(): number {
    return this.queued.size + this.running.size;
  }

  private schedulePump(): void {
    if (this.pumpScheduled) return;
    this.pumpScheduled = true;
    // Same-turn callers join one batch.
    setImmediate(() => {
      this.pumpScheduled = false;
      this.pump();
    });
  }

  private pump(): void {
    while (this.active < this.options.maxConcurrent && this.queued.size > 0) {
      const batch = new Map<string, Flight<R, V>>();
      for (const [key, flight] of this.queued) {
        if (batch.size >= this.options.maxBatch) break;
        batch.set(key, flight);
      }
      for (const key of batch.keys()) this.queued.delete(key);
      void this.run(batch);
    }
  }

  private async run(batch: Map<string, Flight<R, V>>): Promise<void> {
    this.active += 1;
    for (const [key, flight] of batch) this.running.set(key, flight);
    try {
      const answers = await this.options.load([...batch.values()].map((f) => f.request));
      for (const [key, flight] of batch) {
        if (answers.has(key)) flight.resolve(answers.get(key) as V);
        else flight.reject(new Error(`coalesced lookup returned no answer for ${key}`));
      }
    } catch (err) {
      for (const flight of batch.values()) flight.reject(err);
    } finally {
      for (const [key, flight] of batch) if (this.running.get(key) === flight) this.running.delete(key);
      this.active -= 1;
      // Keys that queued while every slot was busy go out together now.
      this.pump();
    }
  }
}

function newFlight<R, V>(request: R): Flight<R, V> {
  let resolve!: (value: V) => void;
  let reject!: (err: unknown) => void;
  const promise = new Promise<V>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { request, promise, resolve, reject };
}
