import { Module } from '@nestjs/common';
import { HistoryReadGate } from './history-read-gate.js';
import { HistoryReadPolicy } from './history-read-policy.js';
import { ConfigurableHistoryReadsModule } from './history-reads.options.js';

/**
 * The per-pod admission gate for reader-served history reads (seed 000):
 * `HistoryReadsModule.forRoot({ readPoolSize })`. It needs nothing else; the RoutedReader hands
 * its permits to reader transactions. HistoryReadPolicy is seed 000 itself (shed, never spill);
 * only a benchmark's baseline overrides it.
 */
@Module({ providers: [HistoryReadGate, HistoryReadPolicy], exports: [HistoryReadGate, HistoryReadPolicy] })
export class HistoryReadsModule extends ConfigurableHistoryReadsModule {}
