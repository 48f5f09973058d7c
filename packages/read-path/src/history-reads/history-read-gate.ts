/**
 * The per-pod cap on reader-served history reads (seed 000; database.md §3.4). A FIFO
 * semaphore with `max(1, floor(4n/5))` permits for a reader pool of n connections: the
 * remaining fifth stays free for authorization reads. A read waits at most 1 s for a permit
 * and is otherwise shed. The permit is handed to the reader transaction (ReaderTx), which
 * releases it when it is released or dropped; it bounds history transactions, not connections.
 * Reads charged to a tenant (the client's key) are shared fairly between tenants, each holding at
 * most its share (PermitGate); a read refused for its tenant's share is not a shed read of the pod.
 */
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

/** One admitted history read. Releasing is idempotent. */
export type HistoryPermit = Permit;

@Injectable()
export class HistoryReadGate extends PermitGate {
  constructor(@Inject(HISTORY_READS_OPTIONS) options: HistoryReadsModuleOptions) {
    const cap = historyReadCap(options.readPoolSize);
    super(cap, { share: shareOf(cap, options.tenantSharePercent ?? 100) });
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
