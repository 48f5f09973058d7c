import { Module } from '@nestjs/common';
import { RoutedReader } from './routed-reader.service.js';
import { ConfigurableRoutedReaderModule } from './routed-reader.options.js';

/**
 * The one door for reads that may go to the replica: `RoutedReaderModule.forRoot({ readMaxAgeMs,
 * writerReadCap })`. It injects DatabaseService, ReplicaFenceService and HistoryReadGate, so
 * DatabaseModule, ReplicaFenceModule and HistoryReadsModule must be registered beside it.
 */
@Module({ providers: [RoutedReader], exports: [RoutedReader] })
export class RoutedReaderModule extends ConfigurableRoutedReaderModule {}
