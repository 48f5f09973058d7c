/**
 * The process-wide budget for output queued to WebSocket clients: bytes handed to
 * `ws.send` whose write has not yet reached the kernel. Each connection also has a
 * budget of its own (RelayConnection); this one bounds their sum, so many stalled
 * readers together cannot pin more than `limit` bytes. When a send would find the
 * process at its limit, the connections holding the most queued output are cut off
 * (their sockets dropped, their bytes released) until the total is under it again.
 */
import type { Gauge } from 'prom-client';
import type { MemoryPool } from '../memory/memory-budget.js';

/** What the budget needs from a connection. */
export interface OutputHolder {
  readonly queuedBytes: number;
  readonly isCancelled: boolean;
  /** Drops the client's socket (even one already closing) and releases its queued bytes. */
  disconnectSlow(): void;
}

export class OutputBudget {
  private queued = 0;
  private readonly holders = new Set<OutputHolder>();

  /** `pool`: the memory budget's `output` pool, which mirrors what is queued (the cut-off policy here is its admission). */
  constructor(
    readonly limit: number,
    private readonly gauge?: Gauge,
    private readonly pool?: MemoryPool,
  ) {}

  /** Bytes currently queued across all connections. */
  get total(): number {
    return this.queued;
  }

  track(holder: OutputHolder): void {
    this.holders.add(holder);
  }

  untrack(holder: OutputHolder): void {
    this.holders.delete(holder);
  }

  add(bytes: number): void {
    this.queued += bytes;
    this.gauge?.set(this.queued);
    this.pool?.mirror(this.queued);
  }

  release(bytes: number): void {
    this.queued -= bytes;
    this.gauge?.set(this.queued);
    this.pool?.mirror(this.queued);
  }

  /**
   * Makes room for a frame of `bytes` from `sender`: while it would take the process past
   * its limit (plus `slack`, the reserve a terminal frame may use), the largest holder is
   * cut off. A frame larger than the whole budget passes only when nothing else is queued.
   * False when no room could be made or the sender itself was cut off.
   */
  makeRoom(sender: OutputHolder, bytes: number, slack = 0): boolean {
    while (this.queued > 0 && this.queued + bytes > this.limit + slack) {
      const victim = this.largest();
      if (!victim) return false;
      victim.disconnectSlow();
    }
    return !sender.isCancelled;
  }

  private largest(): OutputHolder | undefined {
    let best: OutputHolder | undefined;
    for (const h of this.holders) {
      if (h.queuedBytes === 0) continue;
      if (!best || h.queuedBytes > best.queuedBytes) best = h;
    }
    return best;
  }
}
