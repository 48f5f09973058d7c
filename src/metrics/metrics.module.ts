import { Global, Module } from '@nestjs/common';
import { collectDefaultMetrics, register } from 'prom-client';
import { MetricsListener } from './metrics-listener.js';
import { RelayMetrics } from './relay-metrics.service.js';

/** Node's process and GC families (prom-client's defaults), registered once per process. */
function registerDefaultMetrics(): void {
  if (register.getSingleMetric('process_cpu_user_seconds_total') === undefined) collectDefaultMetrics();
}

@Global()
@Module({
  providers: [RelayMetrics, MetricsListener],
  exports: [RelayMetrics, MetricsListener],
})
export class MetricsModule {
  constructor() {
    registerDefaultMetrics();
  }
}
