/**
 * An in-process map whose entries all live for the same time, with a hard cap on
 * size. Because every entry gets the same lifetime, insertion order is expiry
 * order: expired entries are swept from the head in amortised O(1), and when the
 * map is full of live entries the oldest one is dropped. Memory is therefore
 * bounded by `maxEntries` whatever the traffic.
 */
export class TtlMap<V> {
  private readonly entries = new Map<string, { value: V; expiresAt: number }>();
  /** Set time of the newest entry the size cap dropped before it expired. */
  private droppedSetAt = -Infinity;

  constructor(
    private readonly ttlMs: number,
    private readonly maxEntries: number,
    private readonly now: () => number = Date.now,
  ) {}

  get size(): number {
    return this.entries.size;
  }

  get(key: string): V | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (entry.expiresAt > this.now()) return entry.value;
    this.entries.delete(key);
    return undefined;
  }

  has(key: string): boolean {
    return this.get(key) !== undefined;
  }

  /** Sets (or refreshes) the entry; a refreshed entry moves to the tail. */
  set(key: string, value: V): void {
    const t = this.now();
    this.sweep(t);
    this.entries.delete(key);
    if (this.entries.size >= this.maxEntries) this.dropOldest();
    this.entries.set(key, { value, expiresAt: t + this.ttlMs });
  }

  /** Sets the entry only when no live one exists; true when it did (SET NX semantics). */
  setIfAbsent(key: string, value: V): boolean {
    if (this.has(key)) return false;
    this.set(key, value);
    return true;
  }

  /**
   * The earliest time from which every key set (and not deleted) is still held: now − ttl, or
   * later once the size cap has dropped live entries.
   */
  coveredSince(): number {
    return Math.max(this.now() - this.ttlMs, this.droppedSetAt + 1);
  }

  delete(key: string): boolean {
    return this.entries.delete(key);
  }

  private sweep(t: number): void {
    for (const [key, entry] of this.entries) {
      if (entry.expiresAt > t) return;
      this.entries.delete(key);
    }
  }

  private dropOldest(): void {
    const oldest = this.entries.entries().next();
    if (oldest.done) return;
    const [key, entry] = oldest.value;
    this.droppedSetAt = Math.max(this.droppedSetAt, entry.expiresAt - this.ttlMs);
    this.entries.delete(key);
  }
}
