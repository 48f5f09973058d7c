import { Module } from '@nestjs/common';
import { HistoryReadGate } from './history-read-gate.js';
import { ConfigurableHistoryReadsModule } from './history-reads.options.js';

/**
 * The per-pod admission gate for reader-served history reads (seed 000):
 * `HistoryReadsModule.forRoot({ readPoolSize })`. It needs nothing else; the RoutedReader hands
 * its permits to reader transactions.
 */
@Module({ providers: [HistoryReadGate], exports: [HistoryReadGate] })
export class HistoryReadsModule extends ConfigurableHistoryReadsModule {}
