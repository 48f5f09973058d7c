import { Module } from '@nestjs/common';
import { HistoryReadGate } from './history-read-gate.js';

/**
 * The per-pod admission gate for reader-served history reads (seed 000). It needs only the
 * global APP_CONFIG provider; the RoutedReader hands its permits to reader transactions.
 */
@Module({ providers: [HistoryReadGate], exports: [HistoryReadGate] })
export class HistoryReadsModule {}
