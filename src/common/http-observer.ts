/**
 * What every HTTP request leaves behind, decided in one place from Fastify's own request
 * hooks (so a 404 or a request answered before its handler counts too):
 *
 * - one log line when the response is written: `HTTP bridge request` for `/events`, `/query` and
 *   `/count` (relay.md §3.1 step 8), `request completed` for the other routes, with `method`,
 *   `route` (the matched pattern, null when nothing matched), `status`, `duration_ms`, `host` and
 *   what the handler annotated (request-annotations.ts). Never a body, never a header's value
 *   but the Host. Probe routes log at debug, so kubelet's polling does not flood info;
 * - `http_requests_total` and `http_request_latency_ms{code,caller,action}` (relay.md §6.3), for
 *   matched routes only, probes and `/metrics` excepted, so a scan of random paths adds no series;
 * - an `http.request` server span (relay.md §6.4), active while the request is handled, so the
 *   datastore spans of a bridge read are its children.
 */
import { context, type Span, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { BaseLogger } from 'pino';
import type { RelayMetrics } from '../metrics/relay-metrics.service.js';
import { normalizeHost } from './host.js';
import { markObserved, requestAnnotations } from './request-annotations.js';

const BRIDGE_ROUTES = new Set(['/events', '/query', '/count']);
/** Liveness and readiness under every name they answer to, the spec's `/health` among them. */
const PROBE_ROUTES = new Set(['/health', '/healthz', '/readyz']);
const CALLER_HEADER = 'x-envoy-downstream-service-cluster';
const VALID_CALLER = /^[A-Za-z0-9_-]{1,64}$/;

const tracer = trace.getTracer('buzz-relay-http');
const spans = new WeakMap<FastifyRequest, Span>();

/** The route pattern Fastify matched, or undefined for a request no route matched (a 404). */
export function matchedRoute(req: FastifyRequest): string | undefined {
  return req.is404 ? undefined : req.routeOptions.url;
}

/** Distinct `caller` values one process labels its HTTP metrics with; later new ones count as `unknown`. */
export const MAX_CALLERS = 32;

/**
 * `caller` of the HTTP metrics: the mesh's downstream cluster when it is a plain name, else
 * `unknown`. The header may come from clients (no mesh in front), so the values are a bounded
 * set: the first {@link MAX_CALLERS} distinct names keep their label, any name after them is
 * `unknown`, and a client sending a new name per request cannot grow the registry.
 */
export class CallerLabels {
  private readonly seen = new Set<string>();

  constructor(private readonly max = MAX_CALLERS) {}

  of(value: string | string[] | undefined): string {
    const v = Array.isArray(value) ? value[0] : value;
    if (v === undefined || !VALID_CALLER.test(v)) return 'unknown';
    if (this.seen.has(v)) return v;
    if (this.seen.size >= this.max) return 'unknown';
    this.seen.add(v);
    return v;
  }
}

/** Liveness and readiness routes (`/_liveness`, `/_readiness` and the plain names). */
function isProbe(route: string): boolean {
  return route.startsWith('/_') || PROBE_ROUTES.has(route);
}

/** Whether a matched route is left out of the HTTP metrics (relay.md §6.3). */
export function skippedByMetrics(route: string): boolean {
  return isProbe(route) || route === '/metrics';
}

export function installHttpObserver(fastify: FastifyInstance, log: BaseLogger, metrics: RelayMetrics): void {
  const callers = new CallerLabels();
  fastify.addHook('onRequest', (req, _reply, done) => {
    markObserved(req);
    const span = tracer.startSpan('http.request', { kind: SpanKind.SERVER, attributes: { 'http.request.method': req.method } });
    spans.set(req, span);
    // The rest of the request, its body read and handler included, runs in the span's context.
    context.with(trace.setSpan(context.active(), span), done);
  });
  fastify.addHook('onResponse', (req, reply, done) => {
    const route = matchedRoute(req);
    const status = reply.statusCode;
    const elapsedMs = reply.elapsedTime;
    logRequest(log, req, route, status, elapsedMs);
    if (route !== undefined && !skippedByMetrics(route)) {
      const labels = { code: String(status), caller: callers.of(req.headers[CALLER_HEADER]), action: route };
      metrics.httpRequests.inc(labels);
      metrics.httpRequestLatency.observe(labels, elapsedMs);
    }
    endSpan(req, route, status);
    done();
  });
}

function logRequest(log: BaseLogger, req: FastifyRequest, route: string | undefined, status: number, elapsedMs: number): void {
  const { err, ...annotated } = requestAnnotations(req);
  const line = {
    method: req.method,
    route: route ?? null,
    status,
    duration_ms: Math.round(elapsedMs * 10) / 10,
    host: normalizeHost(req.headers.host) ?? null,
    ...annotated,
    ...(err === undefined ? {} : { err }),
  };
  const msg = route !== undefined && BRIDGE_ROUTES.has(route) ? 'HTTP bridge request' : 'request completed';
  if (status >= 500) log.error(line, msg);
  else if (route !== undefined && isProbe(route)) log.debug(line, msg);
  else log.info(line, msg);
}

function endSpan(req: FastifyRequest, route: string | undefined, status: number): void {
  const span = spans.get(req);
  if (!span) return;
  spans.delete(req);
  if (route !== undefined) span.setAttribute('http.route', route);
  span.setAttribute('http.response.status_code', status);
  if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
  span.end();
}
