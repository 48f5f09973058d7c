import { Global, Module } from '@nestjs/common';
import { PrometheusModule } from '@willsoto/nestjs-prometheus';
import { RelayMetrics } from './relay-metrics.service.js';

@Global()
@Module({
  imports: [PrometheusModule.register({ path: '/metrics', defaultMetrics: { enabled: true } })],
  providers: [RelayMetrics],
  exports: [RelayMetrics],
})
export class MetricsModule {}
