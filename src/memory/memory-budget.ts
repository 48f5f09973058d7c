/**
 * One memory budget for the process. Every kind of client-driven memory that can grow with what
 * clients send is drawn from a pool of it before the work is admitted: frames held before AUTH,
 * the filters of open subscriptions and REQs in progress, history rows read and not yet sent,
 * and queued output (OutputBudget, sized from the same budget). Work that does
 * not fit is refused at admission with a reason the client can act on; the process never learns
 * of its limit from an out-of-memory crash.
 *
 * The budget is half the V8 heap limit the process actually runs with (so the k8s flag
 * `--max-old-space-size` and a bigger box both just work) unless BUZZ_MEMORY_BUDGET_BYTES says
 * otherwise; the other half is the relay's own working set (modules, caches, metrics, the
 * allocations of work already admitted, garbage not yet collected).
 *
 * Within a pool, one key may hold at most its share (BUZZ_KEY_SHARE_PERCENT), so a key that fills
 * its share is refused while others are still served.
 */
import type { Counter, Gauge } from 'prom-client';
import { HttpError } from '../common/http-error.js';
import { MEMORY_SHARES, type MemoryKind } from '../config/memory-shares.js';
import type { Refusal } from '../nostr/refusal.js';
import { MEMORY_REFUSALS } from './memory.refusals.js';

export { MEMORY_SHARES, type MemoryKind };

/** Why a take was refused: the pool is full, or the key holds its share of it. */
export type MemoryRefusal = 'process' | 'key';

/**
 * The last part of a pool kept for keys that hold little of it (as the last connections are kept
 * for addresses that hold few): a few keys each at their share can fill the rest, never this.
 */
export interface PoolReserve {
  /** Bytes at the top of the pool a key may take only while it holds at most `keyFloor`. */
  readonly bytes: number;
  readonly keyFloor: number;
}

/**
 * The reserve of the `filters` pool: its last 20 %, for keys holding at most 1 % of it. Filters
 * are held for as long as a subscription stays open, so without it four keys at a 25 % share (or
 * ten at 10 %) fill the pool and every other key's first subscription is refused.
 */
export const FILTERS_RESERVE = { fraction: 0.2, keyFloorFraction: 0.01 } as const;

export interface MemoryMetrics {
  readonly budget: Gauge<'kind'>;
  readonly inUse: Gauge<'kind'>;
  readonly refusals: Counter<'kind' | 'reason'>;
}

/** One kind's part of the budget. Bytes are taken before the memory is used and released after. */
export class MemoryPool {
  private used = 0;
  private readonly byKey = new Map<string, number>();
  private waiters: Array<() => void> = [];
  readonly keyLimit: number;

  constructor(
    readonly kind: MemoryKind,
    readonly limit: number,
    keySharePercent: number,
    private readonly metrics?: MemoryMetrics,
    private readonly reserve?: PoolReserve,
  ) {
    this.keyLimit = Math.max(1, Math.floor((limit * keySharePercent) / 100));
    metrics?.budget.set({ kind }, limit);
    metrics?.inUse.set({ kind }, 0);
  }

  get inUse(): number {
    return this.used;
  }

  /** What `key` (or anyone, without a key) could take now. */
  available(key?: string): number {
    const pool = this.limit - this.used;
    if (key === undefined) return Math.max(0, pool);
    const held = this.byKey.get(key) ?? 0;
    const belowReserve = this.limit - this.reserveBytes() - this.used;
    const reserved = this.reserve === undefined ? pool : Math.max(belowReserve, this.reserve.keyFloor - held);
    return Math.max(0, Math.min(pool, this.keyLimit - held, reserved));
  }

  /**
   * Takes `bytes` (charged to `key` when given) if the pool and the key's share both have room;
   * a key past the reserve's floor takes nothing from the reserve.
   */
  take(bytes: number, key?: string): MemoryRefusal | undefined {
    const held = key === undefined ? 0 : (this.byKey.get(key) ?? 0);
    const overShare = key !== undefined && (held + bytes > this.keyLimit || (this.used + bytes > this.limit - this.reserveBytes() && !this.inReserveFor(held + bytes)));
    const refusal: MemoryRefusal | undefined = overShare ? 'key' : this.used + bytes > this.limit ? 'process' : undefined;
    if (refusal !== undefined) {
      this.metrics?.refusals.inc({ kind: this.kind, reason: refusal });
      return refusal;
    }
    this.used += bytes;
    if (key !== undefined) this.byKey.set(key, held + bytes);
    this.metrics?.inUse.set({ kind: this.kind }, this.used);
    return undefined;
  }

  private reserveBytes(): number {
    return this.reserve?.bytes ?? 0;
  }

  /** Whether a key holding `held` bytes may still take from the reserve. */
  private inReserveFor(held: number): boolean {
    return this.reserve === undefined || held <= this.reserve.keyFloor;
  }

  /** Counts a refusal decided by the caller from available() without a take. */
  refused(reason: MemoryRefusal): void {
    this.metrics?.refusals.inc({ kind: this.kind, reason });
  }

  /**
   * Takes `bytes` whether or not they fit: memory already in use that the pool must show (the
   * one row a page always carries, however large). Admission stays with take().
   */
  force(bytes: number, key?: string): void {
    this.used += bytes;
    if (key !== undefined) this.byKey.set(key, (this.byKey.get(key) ?? 0) + bytes);
    this.metrics?.inUse.set({ kind: this.kind }, this.used);
  }

  release(bytes: number, key?: string): void {
    if (bytes <= 0) return;
    this.used = Math.max(0, this.used - bytes);
    if (key !== undefined) {
      const left = (this.byKey.get(key) ?? 0) - bytes;
      if (left > 0) this.byKey.set(key, left);
      else this.byKey.delete(key);
    }
    this.metrics?.inUse.set({ kind: this.kind }, this.used);
    const waiters = this.waiters;
    this.waiters = [];
    for (const wake of waiters) wake();
  }

  /** Resolves at the next release, after `ms`, or when `signal` aborts, whichever comes first. */
  released(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal?.addEventListener('abort', done, { once: true });
      this.waiters.push(done);
    });
  }

  /**
   * Sets what is in use for a kind whose admission is decided elsewhere (queued output: the
   * OutputBudget cuts off the largest holders instead of refusing a send), for the metrics.
   */
  mirror(bytes: number): void {
    this.used = bytes;
    this.metrics?.inUse.set({ kind: this.kind }, bytes);
  }

  /** A lease of `bytes` for `key`, or the refusal. */
  lease(bytes: number, key?: string): MemoryLease | MemoryRefusal {
    const refused = this.take(bytes, key);
    return refused ?? new MemoryLease(this, bytes, key);
  }
}

/** Bytes taken from a pool by one piece of work; settle() sets it to what was used, end() gives it back. */
export class MemoryLease {
  private held: number;

  constructor(
    private readonly pool: MemoryPool,
    bytes: number,
    private readonly key: string | undefined,
  ) {
    this.held = bytes;
  }

  get bytes(): number {
    return this.held;
  }

  /** The most the lease's key may hold of its pool. */
  get keyLimit(): number {
    return this.pool.keyLimit;
  }

  /** Adds up to `bytes` that fit the pool and the key's share now (never waits, never refuses). */
  grow(bytes: number): void {
    const more = Math.max(0, Math.min(bytes, this.pool.available(this.key)));
    if (more > 0 && this.pool.take(more, this.key) === undefined) this.held += more;
  }

  /** Adds `bytes` if they fit the pool and the key's share now; else nothing is taken and the refusal is returned. */
  add(bytes: number): MemoryRefusal | undefined {
    const refused = this.pool.take(bytes, this.key);
    if (refused === undefined) this.held += bytes;
    return refused;
  }

  /**
   * Sets the lease to `bytes`: what is left over goes back; memory already used past the lease
   * is taken whether or not it fits (it is in use either way), so the pool shows it.
   */
  settle(bytes: number): void {
    const keep = Math.max(0, bytes);
    if (keep > this.held) this.pool.force(keep - this.held, this.key);
    else this.pool.release(this.held - keep, this.key);
    this.held = keep;
  }

  end(): void {
    this.settle(0);
  }
}

export class MemoryBudget {
  readonly pools: Readonly<Record<MemoryKind, MemoryPool>>;

  /** `limits`: a kind whose size the operator set on its own (BUZZ_SEND_BUFFER_TOTAL_BYTES for output). */
  constructor(
    readonly totalBytes: number,
    keySharePercent: number,
    metrics?: MemoryMetrics,
    limits: Partial<Record<MemoryKind, number>> = {},
  ) {
    const limitOf = (kind: MemoryKind) => limits[kind] ?? Math.floor(totalBytes * MEMORY_SHARES[kind]);
    const pool = (kind: MemoryKind, reserve?: PoolReserve) => new MemoryPool(kind, limitOf(kind), keySharePercent, metrics, reserve);
    const filters = limitOf('filters');
    // Shares off (100 %) is fairness off: no reserve either.
    const filtersReserve =
      keySharePercent >= 100 ? undefined : { bytes: Math.floor(filters * FILTERS_RESERVE.fraction), keyFloor: Math.floor(filters * FILTERS_RESERVE.keyFloorFraction) };
    this.pools = { output: pool('output'), history: pool('history'), filters: pool('filters', filtersReserve), auth_hold: pool('auth_hold') };
  }

  pool(kind: MemoryKind): MemoryPool {
    return this.pools[kind];
  }
}

/**
 * Thrown by work refused for memory, with its refusal (MEMORY_REFUSALS: `poolFull` when the pool
 * is full, `keyShare` when the key holds its share), whose wire text is the message. Over HTTP it
 * is a 503 whose body is the refusal's detail, or a 429 whose body is its wire text, both with
 * `Retry-After`.
 */
export class MemoryRefusedError extends HttpError {
  readonly refusal: Refusal;

  constructor(
    readonly kind: MemoryKind,
    readonly reason: MemoryRefusal,
  ) {
    const refusal = reason === 'key' ? MEMORY_REFUSALS.keyShare : MEMORY_REFUSALS.poolFull;
    super(reason === 'key' ? 429 : 503, refusal.wire, { error: reason === 'key' ? refusal.wire : refusal.detail }, 1);
    this.name = 'MemoryRefusedError';
    this.refusal = refusal;
  }
}
