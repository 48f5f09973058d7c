/**
 * Datastore spans (database.md §6.4): an OpenTelemetry span named after the operation that
 * also records `buzz_db_operation_duration_seconds{operation,outcome}`. Spans never record
 * arguments; callers add only the documented numeric and kind fields.
 */
import { performance } from 'node:perf_hooks';
import { Span, SpanStatusCode, trace } from '@opentelemetry/api';
import type { DatabaseMetrics } from './database-metrics.service.js';

const tracer = trace.getTracer('buzz-relay-datastore');

export async function datastoreSpan<T>(metrics: DatabaseMetrics, operation: string, fn: (span: Span) => Promise<T>): Promise<T> {
  return tracer.startActiveSpan(operation, async (span) => {
    const started = performance.now();
    let outcome: 'success' | 'error' = 'success';
    try {
      return await fn(span);
    } catch (err) {
      outcome = 'error';
      span.setStatus({ code: SpanStatusCode.ERROR });
      throw err;
    } finally {
      metrics.operationDuration.observe({ operation, outcome }, (performance.now() - started) / 1000);
      span.end();
    }
  });
}
