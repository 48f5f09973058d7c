/**
 * The per-pod cap on reader-served history reads (seed 000; database.md §3.4). A FIFO
 * semaphore with `max(1, floor(4n/5))` permits for a reader pool of n connections: the
 * remaining fifth stays free for authorization reads. A read waits at most 1 s for a permit
 * and is otherwise shed. The permit is handed to the reader transaction (ReaderTx), which
 * releases it when it is released or dropped; it bounds history transactions, not connections.
 * Reads charged to a tenant (the client's key) are shared fairly between tenants, each holding at
 * most its share (PermitGate); a read refused for its tenant's share is not a shed read of the pod.
 *
 * Heavy reads (a full-text count, a filter of many values) also hold one of a smaller number of
 * places, a quarter of the cap by default: each is a replica backend busy on a core for its whole
 * statement, and without the bound a flood of them filled every permit and took the replica's
 * cores from everyone's light reads (docs/journal/28-heavy-history-reads.md).
 */
import { performance } from 'node:perf_hooks';
import { Inject, Injectable } from '@nestjs/common';
import { GateRefusal, Permit, PermitGate, shareOf } from '../common/permit-gate.js';
import { HISTORY_READS_OPTIONS } from './history-reads.options.js';
import type { HistoryReadsModuleOptions } from './history-reads.options.js';

/** How long a history read waits for a permit before it is rejected (`history_read_cap`). */
export const HISTORY_PERMIT_WAIT_MS = 1000;

/** Design choice (§3.4): reserve the fifth rounded up, at least one permit. 20 → 16, 24 → 19. */
export function historyReadCap(readerPoolSize: number): number {
  return Math.max(1, Math.floor((4 * readerPoolSize) / 5));
}

/** Heavy history reads at once by default: a quarter of the cap, at least one. 16 → 4. */
export function historyHeavyReadCap(cap: number): number {
  return Math.max(1, Math.floor(cap / 4));
}

/** One admitted history read. Releasing is idempotent. */
export type HistoryPermit = Permit;

/** Which gate refused a history read, and why. */
export interface HistoryRefusal {
  readonly gate: 'history_reads' | 'history_heavy_reads';
  readonly refusal: GateRefusal;
}

@Injectable()
export class HistoryReadGate extends PermitGate {
  /** Places for heavy reads: a heavy read takes one first, then a permit of the cap. */
  readonly heavy: PermitGate;

  constructor(@Inject(HISTORY_READS_OPTIONS) options: HistoryReadsModuleOptions) {
    const cap = historyReadCap(options.readPoolSize);
    const percent = options.tenantSharePercent ?? 100;
    super(cap, { share: shareOf(cap, percent) });
    const heavyCap = Math.min(cap, options.heavyReadCap ?? historyHeavyReadCap(cap));
    this.heavy = new PermitGate(heavyCap, { share: shareOf(heavyCap, percent) });
  }

  /**
   * A read's admission in one wait of `waitMs`: a heavy read waits for a heavy place, then for a
   * permit in what is left of the wait. The permit it resolves with releases both.
   */
  async admitRead(heavy: boolean, tenant?: string, waitMs = HISTORY_PERMIT_WAIT_MS): Promise<HistoryPermit | HistoryRefusal> {
    if (!heavy) {
      const permit = await this.admit(waitMs, tenant);
      return typeof permit === 'string' ? { gate: 'history_reads', refusal: permit } : permit;
    }
    const started = performance.now();
    const place = await this.heavy.admit(waitMs, tenant);
    if (typeof place === 'string') return { gate: 'history_heavy_reads', refusal: place };
    const permit = await this.admit(Math.max(1, waitMs - (performance.now() - started)), tenant);
    if (typeof permit === 'string') {
      place.release();
      return { gate: 'history_reads', refusal: permit };
    }
    return {
      release() {
        permit.release();
        place.release();
      },
    };
  }

  /** Resolves with a permit, or with undefined once `waitMs` passed without one (FIFO within a tenant). */
  override acquire(waitMs = HISTORY_PERMIT_WAIT_MS, tenant?: string): Promise<HistoryPermit | undefined> {
    return super.acquire(waitMs, tenant);
  }

  /** A permit, or why there was none after `waitMs`. */
  override admit(waitMs = HISTORY_PERMIT_WAIT_MS, tenant?: string): Promise<HistoryPermit | GateRefusal> {
    return super.admit(waitMs, tenant);
  }
}
