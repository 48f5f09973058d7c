/**
 * Seed 000 as a provider: history reads are admitted by the per-pod gate and shed (never spilled
 * onto the writer) when the cap is full or the reader saturated. Nothing in the relay's
 * configuration changes it. The benchmarks alone replace it (bench/lib/spill-relay.ts) to
 * measure the old spill behaviour they compare against.
 */
import { Injectable } from '@nestjs/common';

@Injectable()
export class HistoryReadPolicy {
  /** Shed instead of spilling. False only in a benchmark's spill baseline. */
  readonly shed: boolean = true;
}
