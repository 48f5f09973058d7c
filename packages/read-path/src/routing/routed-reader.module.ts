import { Module } from '@nestjs/common';
import { RoutePaths } from './route-paths.js';
import { RoutedReader } from './routed-reader.service.js';
import { ConfigurableRoutedReaderModule, ROUTED_READER_OPTIONS, type RoutedReaderModuleOptions } from './routed-reader.options.js';

/** The route path labels: the relay's, and the importer's own from the options. */
const ROUTE_PATHS = {
  provide: RoutePaths,
  inject: [ROUTED_READER_OPTIONS],
  useFactory: (options: RoutedReaderModuleOptions) => new RoutePaths(options.routePathLabels ?? null),
};

/**
 * The one door for reads that may go to the replica: `RoutedReaderModule.forRoot({ readMaxAgeMs,
 * writerReadCap, routePathLabels })`. It injects DatabaseService, ReplicaFenceService and HistoryReadGate, so
 * DatabaseModule, ReplicaFenceModule and HistoryReadsModule must be registered beside it.
 */
@Module({ providers: [RoutedReader, ROUTE_PATHS], exports: [RoutedReader, RoutePaths] })
export class RoutedReaderModule extends ConfigurableRoutedReaderModule {}
