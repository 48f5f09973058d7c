/**
 * Reads refused at a shared read gate (the writer-read cap, the replica history-read cap, the
 * search gate), by why: `share`, the read's tenant (the relay: the client's key) already held its
 * share of the gate, so that key is slowed while others are served; `capacity`, the gate was full
 * with other tenants' reads (the relay is busy); `preempted`, a read of the tenant that used the
 * writer-read cap most was cancelled so a tenant holding nothing could read. A `buzz_db_*`
 * family: the database library registers it.
 */
import { counter } from './metric-factory.js';

export type ReadShareGate = 'writer_reads' | 'writer_heavy_reads' | 'history_reads' | 'history_heavy_reads' | 'search';
export type ReadShareRefusal = 'share' | 'capacity' | 'preempted';

const refusals = counter({
  name: 'buzz_db_read_share_refusals_total',
  help: 'Reads refused at a shared read gate: reason=share, the tenant held its share of the gate; reason=capacity, the gate was full with other reads; reason=preempted, stopped for a tenant that used it less',
  labelNames: ['gate', 'reason'],
});

export function recordReadShareRefusal(gate: ReadShareGate, reason: ReadShareRefusal): void {
  refusals.inc({ gate, reason });
}
