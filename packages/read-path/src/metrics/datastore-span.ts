/**
 * Datastore spans (database.md §6.4): an OpenTelemetry span named after the operation that
 * also records `buzz_db_operation_duration_seconds{operation,outcome}`. Spans never record
 * arguments; callers add only the documented numeric and kind fields.
 */
import { performance } from 'node:perf_hooks';
import { Logger } from '@nestjs/common';
import { Span, SpanStatusCode, trace } from '@opentelemetry/api';
import type { DatabaseMetrics } from './database-metrics.service.js';

const tracer = trace.getTracer('buzz-relay-datastore');
const logger = new Logger('buzz_datastore');
/** Slow completions (≥ 500 ms) warn with only operation, outcome and elapsed ms, every 100th per operation. */
export const SLOW_SPAN_MS = 500;
const SLOW_SAMPLE_EVERY = 100;
const slowSeen = new Map<string, number>();

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
      const elapsedMs = performance.now() - started;
      metrics.operationDuration.observe({ operation, outcome }, elapsedMs / 1000);
      if (elapsedMs >= SLOW_SPAN_MS) warnSlow(operation, outcome, elapsedMs);
      span.end();
    }
  });
}

function warnSlow(operation: string, outcome: string, elapsedMs: number): void {
  const seen = (slowSeen.get(operation) ?? 0) + 1;
  slowSeen.set(operation, seen);
  if (seen % SLOW_SAMPLE_EVERY === 1) logger.warn({ operation, outcome, elapsedMs: Math.round(elapsedMs) }, 'slow datastore operation');
}
