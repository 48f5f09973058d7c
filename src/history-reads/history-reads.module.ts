import { Module } from '@nestjs/common';
import { HistoryReadGate } from './history-read-gate.js';
import { HistoryReadPolicy } from './history-read-policy.js';

/**
 * The per-pod admission gate for reader-served history reads (seed 000), and the policy that
 * sheds them. It needs only the global APP_CONFIG provider; the RoutedReader hands the gate's
 * permits to reader transactions.
 */
@Module({ providers: [HistoryReadGate, HistoryReadPolicy], exports: [HistoryReadGate, HistoryReadPolicy] })
export class HistoryReadsModule {}
