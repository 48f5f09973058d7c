/**
 * OpenTelemetry tracing. The OpenTelemetry Node SDK is started only when the standard
 * OTEL_* variables ask for it (AppConfig.tracing); main.ts imports this module only then, so a
 * relay started without them loads no SDK and exports nothing. The SDK reads the rest of the
 * standard variables itself (OTEL_EXPORTER_OTLP_PROTOCOL, OTEL_EXPORTER_OTLP_HEADERS,
 * OTEL_TRACES_SAMPLER, OTEL_TRACES_SAMPLER_ARG, OTEL_RESOURCE_ATTRIBUTES, …).
 *
 * Traces only: metrics stay on Prometheus (`/metrics`) and logs on stdout, so the SDK's own
 * metric and log exporters are switched off here rather than defaulting to OTLP.
 */
import { NodeSDK } from '@opentelemetry/sdk-node';
import type { TracingConfig } from '../config/app-config.js';

export interface Tracing {
  /** Flushes the spans still buffered and stops exporting. */
  shutdown(): Promise<void>;
}

export function startTracing(config: TracingConfig): Tracing {
  const sdk = new NodeSDK({ serviceName: config.serviceName, metricReaders: [], logRecordProcessors: [] });
  sdk.start();
  return { shutdown: () => sdk.shutdown() };
}
