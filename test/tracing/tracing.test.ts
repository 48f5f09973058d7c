/**
 * OpenTelemetry traces (issue 20, seed 001): the probe's span tree and fields and the routed
 * read's spans, captured by an in-memory exporter on the real writer + replica; and the built
 * relay exporting over OTLP only because the standard OTEL_* variables say so.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SpanStatusCode, trace } from '@opentelemetry/api';
import { InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { sql } from 'kysely';
import type { Pool } from 'pg';
import { REPLICA_FLOOR_LOCK_KEY } from '../../packages/read-path/src/database/constants.js';
import { ProbeError } from '../../packages/read-path/src/replica-fence/fence-probe.js';
import { BOUNDED } from '../../packages/read-path/src/routing/route-predicate.js';
import { eventually } from '../harness/eventually.js';
import { newIdentity, nip98Header } from '../harness/nostr-clients.js';
import { relayEnv } from '../harness/relay-fixture.js';
import { startRelay } from '../harness/relay-process.js';
import { createTestDatabase, type TestDatabase } from '../harness/test-database.js';
import { adminPool, type DatabaseLayer, startDatabaseLayer } from '../routing/database-layer.js';

const exporter = new InMemorySpanExporter();
const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
let db: TestDatabase;
let admin: Pool;
let layer: DatabaseLayer;

beforeAll(async () => {
  provider.register();
  db = await createTestDatabase();
  admin = adminPool(db.writerUrl);
  layer = await startDatabaseLayer(db, { BUZZ_REPLICA_READ_MAX_AGE_MS: '2000' });
  await layer.fence.waitForBeats(2);
  await layer.fence.stopProbe();
}, 30_000);

afterAll(async () => {
  await layer?.close();
  await admin?.end();
  await db?.drop();
  await provider.shutdown();
  trace.disable();
}, 30_000);

beforeEach(() => exporter.reset());

const named = (name: string): ReadableSpan[] => exporter.getFinishedSpans().filter((s) => s.name === name);
const parentOf = (s: ReadableSpan): string | undefined => s.parentSpanContext?.spanId;

describe('replica_fence_probe spans (seed 001)', () => {
  it('a beat is one replica_fence_probe span with its two waits as children and every phase field', async () => {
    const ok = await layer.fence.step();
    expect(ok).not.toBeInstanceOf(ProbeError);
    const [probe] = named('replica_fence_probe');
    expect(probe).toBeDefined();
    expect(parentOf(probe)).toBeUndefined();
    for (const child of ['replica_fence_probe_acquire', 'replica_fence_probe_lock']) {
      const spans = named(child);
      expect(spans).toHaveLength(1);
      expect(parentOf(spans[0])).toBe(probe.spanContext().spanId);
      expect(spans[0].spanContext().traceId).toBe(probe.spanContext().traceId);
    }
    for (const field of ['acquire_ms', 'lock_ms', 'scan_ms', 'heartbeat_ms', 'commit_ms', 'beat_gap_ms']) {
      expect(typeof probe.attributes[field]).toBe('number');
    }
    expect(probe.attributes.token).toMatch(/^\d+$/);
    expect(probe.attributes.error_kind).toBeUndefined();
    expect(probe.status.code).not.toBe(SpanStatusCode.ERROR);
  });

  it('a failed beat carries error_kind and the phases it reached, with error status', async () => {
    const holder = await admin.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('select pg_advisory_xact_lock_shared($1::bigint)', [REPLICA_FLOOR_LOCK_KEY.toString()]);
      const failed = await layer.fence.step();
      expect(failed).toBeInstanceOf(ProbeError);
    } finally {
      await holder.query('COMMIT');
      holder.release();
    }
    const [probe] = named('replica_fence_probe');
    expect(probe.attributes.error_kind).toBe('lock_timeout');
    expect(typeof probe.attributes.acquire_ms).toBe('number');
    expect(probe.attributes.commit_ms).toBeUndefined();
    expect(probe.attributes.token).toBeUndefined();
    expect(probe.status.code).toBe(SpanStatusCode.ERROR);
    expect(named('replica_fence_probe_lock')[0].status.code).toBe(SpanStatusCode.ERROR);
    expect(await layer.fence.step()).not.toBeInstanceOf(ProbeError); // leave a fresh proof behind
  });
});

describe('routed read spans', () => {
  const read = (author?: { communityId: string; pubkey: string }) =>
    layer.routed.read({ path: 'req_historical', predicate: BOUNDED, span: 'query_events_routed', author }, (d) => sql<{ one: number }>`select 1 as one`.execute(d));

  it('a replica-served read: one query_events_routed span carrying its route decision', async () => {
    await layer.fence.step();
    exporter.reset();
    await read();
    const spans = named('query_events_routed');
    expect(spans).toHaveLength(1);
    expect(spans[0].attributes).toMatchObject({ path: 'req_historical', decision: 'replica', reason: 'fresh' });
    expect(spans[0].attributes.spill_reason).toBeUndefined();
  });

  it('a read sent to the writer names why, including the spill reason', async () => {
    await layer.fence.step();
    const author = { communityId: '00000000-0000-4000-8000-000000000001', pubkey: 'b'.repeat(64) };
    layer.routed.noteWrite(author);
    exporter.reset();
    await read(author);
    const [span] = named('query_events_routed');
    expect(span.attributes).toMatchObject({ path: 'req_historical', decision: 'writer', reason: 'stale', spill_reason: 'fence_wall_behind' });
  });
});

describe('the built relay exports over OTLP only when OTEL_* says so', () => {
  let collector: Server;
  const bodies: unknown[] = [];
  let endpoint: string;

  beforeAll(async () => {
    collector = createServer((req: IncomingMessage, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        if (req.url === '/v1/traces') bodies.push(JSON.parse(Buffer.concat(chunks).toString('utf8')));
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((resolve) => collector.listen(0, '127.0.0.1', resolve));
    endpoint = `http://127.0.0.1:${(collector.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => collector.close(() => resolve())));

  const spanNames = (): Set<string> => {
    const names = new Set<string>();
    for (const body of bodies as { resourceSpans?: { scopeSpans?: { spans?: { name: string }[] }[] }[] }[]) {
      for (const rs of body.resourceSpans ?? []) for (const ss of rs.scopeSpans ?? []) for (const s of ss.spans ?? []) names.add(s.name);
    }
    return names;
  };
  const serviceNames = (): Set<string> => {
    const names = new Set<string>();
    for (const body of bodies as { resourceSpans?: { resource?: { attributes?: { key: string; value: { stringValue?: string } }[] } }[] }[]) {
      for (const rs of body.resourceSpans ?? []) for (const a of rs.resource?.attributes ?? []) if (a.key === 'service.name' && a.value.stringValue) names.add(a.value.stringValue);
    }
    return names;
  };

  interface OtlpSpan {
    name: string;
    kind: number;
    traceId: string;
    spanId: string;
    parentSpanId?: string;
    attributes?: { key: string; value: { stringValue?: string; intValue?: string | number } }[];
  }
  const otlpSpans = (): OtlpSpan[] =>
    (bodies as { resourceSpans?: { scopeSpans?: { spans?: OtlpSpan[] }[] }[] }[]).flatMap((b) => (b.resourceSpans ?? []).flatMap((rs) => (rs.scopeSpans ?? []).flatMap((ss) => ss.spans ?? [])));
  const attr = (span: OtlpSpan, key: string): string | undefined => {
    const v = span.attributes?.find((a) => a.key === key)?.value;
    return v === undefined ? undefined : String(v.stringValue ?? v.intValue);
  };

  const otel = (extra: Record<string, string>) =>
    relayEnv(db, { BUZZ_REPLICA_READ_MAX_AGE_MS: '2000', OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_BSP_SCHEDULE_DELAY: '100', ...extra });

  it('OTEL_EXPORTER_OTLP_ENDPOINT set: the probe spans reach the collector under OTEL_SERVICE_NAME', async () => {
    bodies.length = 0;
    const relay = await startRelay(otel({ OTEL_SERVICE_NAME: 'buzz-tracing-test' }));
    try {
      await eventually('probe spans at the collector', async () => ['replica_fence_probe', 'replica_fence_probe_acquire', 'replica_fence_probe_lock'].every((n) => spanNames().has(n)));
      expect([...serviceNames()]).toEqual(['buzz-tracing-test']);
    } finally {
      await relay.stop();
    }
  }, 60_000);

  it('each HTTP request is an http.request server span, the parent of the datastore spans it runs', async () => {
    bodies.length = 0;
    const relay = await startRelay(otel({}));
    try {
      const reader = newIdentity();
      // Padded so that the body arrives in many chunks, after the request's first hooks ran.
      const body = JSON.stringify([{ kinds: [1], limit: 5 }]) + ' '.repeat(512 * 1024);
      const url = `${relay.httpUrl}/query`;
      expect((await fetch(url, { method: 'POST', headers: { authorization: nip98Header(reader, url, body, undefined, true) }, body })).status).toBe(200);
      expect((await fetch(`${relay.httpUrl}/no-such-route`)).status).toBe(404);
      const requestSpans = () => otlpSpans().filter((s) => s.name === 'http.request');
      await eventually('two http.request spans at the collector', async () => requestSpans().length >= 2);
      const [query, missing] = [requestSpans().find((s) => attr(s, 'http.route') === '/query'), requestSpans().find((s) => attr(s, 'http.route') === undefined)];
      expect(query).toBeDefined();
      expect(missing).toBeDefined();
      expect(query!.kind).toBe(2); // SPAN_KIND_SERVER
      expect(attr(query!, 'http.request.method')).toBe('POST');
      expect(attr(query!, 'http.response.status_code')).toBe('200');
      expect(query!.parentSpanId ?? '').toBe('');
      expect(attr(missing!, 'http.request.method')).toBe('GET');
      expect(attr(missing!, 'http.response.status_code')).toBe('404');
      // The bridge read's datastore spans are children of its request's span.
      await eventually('the read under the request span', async () => otlpSpans().some((s) => s.parentSpanId === query!.spanId && s.traceId === query!.traceId));
    } finally {
      await relay.stop();
    }
  }, 60_000);

  it('OTEL_SDK_DISABLED=true: nothing reaches the collector the endpoint names', async () => {
    bodies.length = 0;
    const relay = await startRelay(otel({ OTEL_SDK_DISABLED: 'true' }));
    try {
      // Let the probe beat a few times (a beat every 500 ms), then let a batch window pass.
      const beats = async () => Number(/buzz_db_operation_duration_seconds_count\{operation="replica_fence_probe",outcome="success"\} (\d+)/.exec(await (await fetch(relay.metricsUrl)).text())?.[1] ?? 0);
      await eventually('four probe beats', async () => (await beats()) >= 4);
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(bodies).toEqual([]);
    } finally {
      await relay.stop();
    }
  }, 60_000);
});
