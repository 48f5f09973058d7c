/**
 * History reads: sequential REQ -> EOSE round trips over authenticated WebSocket connections
 * against the built relay on a real Postgres writer + streaming replica, for four filter shapes
 * (recent kind-1, one author, one `#t` tag, one channel's kind-9 messages; `limit` 20 each).
 * Baseline in the same run: the equivalent SQL (the relay's own query shape, `order by
 * created_at desc, id asc limit 20`) run directly with `pg`, one client per relay connection, one
 * query in flight per client. Prints one JSON line per filter shape plus an `all` line; progress
 * goes to stderr.
 *
 *   npm run build && node dist/bench/req.bench.js [--seed 10000] [--reqs 250] [--connections 8] [--warmup 100]
 *     [--rates 250,500,750] [--open-seconds 10] [--open-warmup-seconds 10] [--shapes kinds,author,tag,channel]
 *     [--rest-seconds 0] [--peers nostream]
 *
 * Then, for each `--rates` value (REQs per second over all connections and the four shapes in
 * turn), an open-loop run of `--open-seconds`: REQs go out on schedule whether or not earlier ones
 * were answered, each latency counted from its scheduled time; the baseline is the same schedule
 * of the same SQL as named statements on 8 direct `pg` connections. These lines (`open_<rate>`)
 * give the latency a client sees below saturation; the closed-loop lines give capacity.
 *
 * `--reqs` is per connection and per shape. The seed is published through the relay (signed with
 * nostr-tools finalizeEvent before timing); each shape's first relay answer is checked against
 * its SQL answer, and every REQ must end with EOSE and `limit` events (exit 1 otherwise).
 *
 * Last, a `memory` line: the relay's RSS once its clients closed, and with `--rest-seconds` N also
 * after N idle seconds (V8 gives its young generation back in a memory-reducing collection some
 * tens of seconds after the load stops; issue 32's goal is RSS after the run).
 *
 * With `--peers nostream` (a checkout named by NOSTREAM_DIR, lib/nostream.ts), once the relay and
 * its pair are stopped: the same signed seed published to nostream on a fresh pair, then the same
 * closed-loop shapes against it (lib/req-peers.ts), one `nostream_<shape>` line each and
 * `nostream_all`, each with `relay_ratio`: the relay's REQ/s of that shape in this run over the
 * peer's.
 */
import { parseArgs } from 'node:util';
import { randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { finalizeEvent, generateSecretKey, getPublicKey, type Event as NostrEvent, type EventTemplate } from 'nostr-tools/pure';
import { Client } from 'pg';
import { BenchConnection, mergePublishResults, toPublishItems } from './lib/bench-connection.js';
import { collectGarbage, logLine, quietPool, round, secondsSince, startBenchEnv, summarize, type BenchEnv, runBench } from './lib/bench-env.js';
import { chartsDir, chartsOption, latencyCdf, latencyOverTime, writeCharts, type SeriesSample, type TimedPoint } from './lib/charts.js';
import { cpuSince, sampleCpu, type CpuSample } from './lib/cpu-usage.js';
import { runOpenLoop } from './lib/open-loop.js';
import { gcCombine, gcTotals, NO_GC, podMetric, type GcTotals } from './lib/pod-metrics.js';
import { procStatusBytes } from './lib/abuse-watch.js';
import { signInParallel, type SignJob } from './lib/sign-pool.js';
import { closeClients, connectClients, dealRoundRobin, runSqlClients } from './lib/sql-baseline.js';
import { type Peer, type PeerName, peersToRun, startPeer, stopPeer } from './lib/req-peers.js';

const { values: args } = parseArgs({
  options: {
    seed: { type: 'string', default: '10000' },
    reqs: { type: 'string', default: '250' },
    connections: { type: 'string', default: '8' },
    warmup: { type: 'string', default: '100' },
    shapes: { type: 'string', default: 'kinds,author,tag,channel' },
    rates: { type: 'string', default: '250,500,750' },
    'open-seconds': { type: 'string', default: '10' },
    'open-warmup-seconds': { type: 'string', default: '10' },
    'rest-seconds': { type: 'string', default: '0' },
    peers: { type: 'string', default: '' },
    ...chartsOption,
  },
});
const SEED = Number(args.seed);
const REQS = Number(args.reqs);
const CONNECTIONS = Number(args.connections);
const WARMUP = Number(args.warmup);
const RATES = args.rates.split(',').filter(Boolean).map(Number);
const SHAPES = args.shapes.split(',').filter(Boolean);
const OPEN_SECONDS = Number(args['open-seconds']);
const OPEN_WARMUP_SECONDS = Number(args['open-warmup-seconds']);
const REST_SECONDS = Number(args['rest-seconds']);
const PEER_NAMES = peersToRun(args.peers);
const LIMIT = 20;
const TOPICS = 20;
const SPREAD_SECS = 300;
const PUBLISH_WINDOW = 64;
/** Channel messages (kind 9) seeded besides the kind-1 events: one per five of those. */
const CHANNEL_MESSAGES = Math.floor(SEED / 5);
/** Channel 0 is quiet (a tenth of the messages); the other three share the rest. */
const CHANNELS = 4;
if (SEED < LIMIT * TOPICS) throw new Error(`--seed must be at least ${LIMIT * TOPICS} so that every tag page is full`);
if (CHANNEL_MESSAGES / 10 < LIMIT) throw new Error(`--seed must be at least ${LIMIT * 50} so that the quiet channel's page is full`);

interface BenchFilter {
  kinds: number[];
  authors?: string[];
  '#t'?: string[];
  '#h'?: [string];
  limit: number;
}

interface Shape {
  name: string;
  /** The filter connection `c` sends as its `r`-th request. */
  filter(c: number, r: number): BenchFilter;
}

function shapes(pubkeys: readonly string[], channels: readonly string[]): Shape[] {
  return [
    { name: 'kinds', filter: () => ({ kinds: [1], limit: LIMIT }) },
    { name: 'author', filter: (c, r) => ({ kinds: [1], authors: [pubkeys[(c + r) % pubkeys.length]], limit: LIMIT }) },
    { name: 'tag', filter: (c, r) => ({ kinds: [1], '#t': [`topic${(c * 7 + r) % TOPICS}`], limit: LIMIT }) },
    // The chat read: one channel's messages, the channel pinned by `#h` (open channels, so every key may read).
    { name: 'channel', filter: (c, r) => ({ kinds: [9], '#h': [channels[(c + r) % channels.length]], limit: LIMIT }) },
  ];
}

/**
 * How the SQL orders its page. `column` (the baseline) sorts by the indexed `events.created_at`.
 * `relay` repeats the relay's statement text (EventReadRepository at the time of writing): its
 * select list aliases `extract(epoch from created_at)::bigint AS created_at`, and a bare
 * `ORDER BY created_at` names that output column, so Postgres sorts on the expression and cannot
 * walk an index. Both give the same rows; measuring both shows how much of the gap is the query.
 */
type OrderBy = 'column' | 'relay';

/** The relay's history query for these filter shapes, as plain SQL. */
function sqlFor(communityId: string, f: BenchFilter, orderBy: OrderBy = 'column'): [string, unknown[]] {
  const params: unknown[] = [communityId, f.kinds];
  const where = ['community_id = $1', 'deleted_at is null', 'kind = any($2::int[])'];
  if (f.authors) where.push(`pubkey = any($${params.push(f.authors.map((a) => Buffer.from(a, 'hex')))}::bytea[])`);
  if (f['#t']) where.push(`tags @> any($${params.push(f['#t'].map((v) => JSON.stringify([['t', v]])))}::jsonb[])`);
  // Every seeded kind-9 row of the channel carries its `h` tag, so the column alone gives the same rows.
  if (f['#h']) where.push(`channel_id = $${params.push(f['#h'][0])}::uuid`);
  const text = `select id, pubkey, extract(epoch from created_at)::bigint as created_at, kind, tags, content, sig
                  from events where ${where.join(' and ')}
                 order by ${orderBy === 'column' ? 'events.created_at' : 'created_at'} desc, id asc limit ${f.limit}`;
  return [text, params];
}

function seedTemplates(channels: readonly string[]): SignJob[] {
  const now = Math.floor(Date.now() / 1000);
  const notes = Array.from({ length: SEED }, (_, i) => {
    const template: EventTemplate = {
      kind: 1,
      created_at: now - (i % SPREAD_SECS),
      tags: [['t', 'bench'], ['t', `topic${i % TOPICS}`], ['client', 'buzz-bench']],
      content: `seed message ${i}: the quick brown fox jumps over the lazy dog`,
    };
    return { key: i % CONNECTIONS, template };
  });
  const messages = Array.from({ length: CHANNEL_MESSAGES }, (_, i) => {
    const channel = channels[i % 10 === 0 ? 0 : 1 + (i % (CHANNELS - 1))];
    const template: EventTemplate = {
      kind: 9,
      created_at: now - (i % SPREAD_SECS),
      tags: [['h', channel]],
      content: `channel message ${i}: the quick brown fox jumps over the lazy dog`,
    };
    return { key: i % CONNECTIONS, template };
  });
  return [...notes, ...messages];
}

/** Creates the open channels (kind 9007, by the first connection's key) that the seed posts to. */
async function createChannels(conn: BenchConnection, sk: Uint8Array, channels: readonly string[]): Promise<void> {
  const now = Math.floor(Date.now() / 1000);
  const created = channels.map((h, i) => finalizeEvent({ kind: 9007, created_at: now, tags: [['h', h], ['name', `bench-${i}`]], content: '' }, sk));
  const result = await conn.publishWindowed(toPublishItems(created), 1);
  if (result.accepted !== channels.length) throw new Error(`channel creation: ${JSON.stringify(Object.fromEntries(result.reasons))}`);
}

async function seed(env: BenchEnv, conns: readonly BenchConnection[], events: readonly NostrEvent[]): Promise<void> {
  const perConnection = dealRoundRobin(events, conns.length).map(toPublishItems);
  const start = process.hrtime.bigint();
  const result = mergePublishResults(await Promise.all(conns.map((c, i) => c.publishWindowed(perConnection[i], PUBLISH_WINDOW))));
  if (result.accepted !== events.length) throw new Error(`seeding: ${result.accepted}/${events.length} accepted: ${JSON.stringify(Object.fromEntries(result.reasons))}`);
  // Vacuum now (GIN pending lists merged, visibility map set, statistics fresh), so that
  // autovacuum does not wake up on the fresh rows in the middle of a measured run.
  const pool = quietPool(env.writerUrl, 1);
  try {
    await pool.query('vacuum (analyze) events, event_refs, event_tags');
  } finally {
    await pool.end();
  }
  await env.cluster.waitForReplica();
  logLine(`seeded ${result.accepted} events through the relay in ${round(secondsSince(start), 1)} s`);
}

/**
 * Signs the seed and publishes it. Returns the signed events when a peer will be seeded with them
 * too; otherwise they are garbage once this returns.
 */
async function signAndSeed(env: BenchEnv, conns: readonly BenchConnection[], keys: readonly Uint8Array[], channels: readonly string[]): Promise<NostrEvent[]> {
  const signStart = process.hrtime.bigint();
  const events = await signInParallel(keys, seedTemplates(channels));
  logLine(`signed ${events.length} events in ${round(secondsSince(signStart), 1)} s (nostr-tools finalizeEvent)`);
  await seed(env, conns, events);
  return PEER_NAMES.length > 0 ? events : [];
}

async function communityOf(url: string): Promise<string> {
  const pool = quietPool(url, 1);
  try {
    const { rows } = await pool.query<{ community_id: string }>('select distinct community_id from events');
    if (rows.length !== 1) throw new Error(`expected the seed in one community, found ${rows.length}`);
    return rows[0].community_id;
  } finally {
    await pool.end();
  }
}

interface RelayRun {
  seconds: number;
  latenciesMs: number[];
  /** Per REQ: [connection, sent at (ms, performance.now()), latency ms], for BENCH_SAMPLES. */
  samples: [number, number, number][];
  firstIds: string[];
  bad: string[];
}

/**
 * `count` REQs per connection, one after another, each reusing the subscription id (NIP-01: a REQ
 * replaces the subscription of the same id). `closeEach`: send CLOSE after each EOSE instead, for
 * a peer that refuses a reused id (nostream answers a NOTICE and no EOSE).
 */
async function relayRun(conns: readonly BenchConnection[], shape: Shape, count: number, closeEach = false): Promise<RelayRun> {
  const run: RelayRun = { seconds: 0, latenciesMs: [], samples: [], firstIds: [], bad: [] };
  const start = process.hrtime.bigint();
  await Promise.all(
    conns.map(async (conn, c) => {
      for (let r = 0; r < count; r++) {
        const res = await conn.req('q', shape.filter(c, r));
        if (closeEach) conn.closeSubscription('q');
        run.latenciesMs.push(res.ms);
        run.samples.push([c, res.sentAtMs, res.ms]);
        if (c === 0 && r === 0) run.firstIds = res.ids;
        if (res.end !== 'EOSE' || res.ids.length !== LIMIT) run.bad.push(`${res.end} ${res.reason ?? ''} after ${res.ids.length} events`);
      }
    }),
  );
  run.seconds = secondsSince(start);
  return run;
}

async function sqlRun(url: string, communityId: string, shape: Shape, count: number, orderBy: OrderBy = 'column') {
  const jobs = Array.from({ length: CONNECTIONS }, (_, c) => Array.from({ length: count }, (_, r) => sqlFor(communityId, shape.filter(c, r), orderBy)));
  return runSqlClients(url, jobs, (client: Client, [text, params]) => client.query(text, params));
}

async function firstSqlIds(url: string, communityId: string, shape: Shape): Promise<string[]> {
  const pool = quietPool(url, 1);
  try {
    const [text, params] = sqlFor(communityId, shape.filter(0, 0));
    const { rows } = await pool.query<{ id: Buffer }>(text, params);
    return rows.map((row) => row.id.toString('hex'));
  } finally {
    await pool.end();
  }
}

interface Timed {
  seconds: number;
  latenciesMs: number[];
  /** CPU seconds used during the run. */
  cpu: CpuSample;
}

interface ShapeResult {
  relay: Timed;
  /** The relay's garbage collections during its measured run. */
  gc: GcTotals;
  /** The measured relay run's REQs, for BENCH_SAMPLES. */
  samples: RelayRun['samples'];
  sql: Timed;
  relaySql: Timed;
}

/** Milliseconds of CPU per request of a run. */
function perItem(cpuSeconds: number, run: Timed): number {
  return round((cpuSeconds * 1000) / run.latenciesMs.length, 3);
}

/** Runs fn and adds the CPU used meanwhile to its result. */
async function metered<T extends Omit<Timed, 'cpu'>>(env: BenchEnv, fn: () => Promise<T>): Promise<T & Timed> {
  const before = sampleCpu(env.relayPid, env.cluster.baseDir);
  const result = await fn();
  return { ...result, cpu: cpuSince(before, sampleCpu(env.relayPid, env.cluster.baseDir)) };
}

function resultLine(variant: string, { relay, gc, sql, relaySql }: ShapeResult) {
  const reqsPerS = relay.latenciesMs.length / relay.seconds;
  const sqlPerS = sql.latenciesMs.length / sql.seconds;
  const r = summarize(relay.latenciesMs);
  const s = summarize(sql.latenciesMs);
  const rs = summarize(relaySql.latenciesMs);
  return {
    bench: 'req',
    variant,
    seed_events: SEED,
    channel_messages: CHANNEL_MESSAGES,
    connections: CONNECTIONS,
    limit: LIMIT,
    reqs: relay.latenciesMs.length,
    reqs_per_s: round(reqsPerS, 1),
    eose_p50_ms: r.p50,
    eose_p90_ms: r.p90,
    eose_p99_ms: r.p99,
    eose_max_ms: r.max,
    baseline_queries_per_s: round(sqlPerS, 1),
    baseline_p50_ms: s.p50,
    baseline_p90_ms: s.p90,
    baseline_p99_ms: s.p99,
    ratio: round(reqsPerS / sqlPerS, 3),
    relay_cpu_ms_per_req: perItem(relay.cpu.relay, relay),
    pg_cpu_ms_per_req: perItem(relay.cpu.postgres, relay),
    client_cpu_ms_per_req: perItem(relay.cpu.client, relay),
    relay_scavenges_per_s: round(gc.minor / relay.seconds, 1),
    relay_scavenge_mean_ms: round((gc.minorSeconds * 1000) / gc.minor, 2),
    relay_mark_compacts: gc.major,
    relay_gc_ms_per_s: round(((gc.minorSeconds + gc.majorSeconds) * 1000) / relay.seconds, 1),
    baseline_pg_cpu_ms_per_query: perItem(sql.cpu.postgres, sql),
    relay_shape_sql_queries_per_s: round(relaySql.latenciesMs.length / relaySql.seconds, 1),
    relay_shape_sql_p50_ms: rs.p50,
    relay_shape_sql_p99_ms: rs.p99,
    relay_shape_sql_pg_cpu_ms_per_query: perItem(relaySql.cpu.postgres, relaySql),
  };
}

async function measureShape(env: BenchEnv, conns: readonly BenchConnection[], communityId: string, shape: Shape): Promise<ShapeResult> {
  // Each warm-up runs right before its measured run: with the SQL warm-up in between, the relay
  // sat idle for 10 s or more before it was measured, and every shape's first round was slow.
  await relayRun(conns, shape, WARMUP);
  collectGarbage();
  const gcBefore = await gcTotals(env.relayUrl);
  const relay = await metered(env, () => relayRun(conns, shape, REQS));
  const gc = gcCombine(await gcTotals(env.relayUrl), gcBefore, -1);
  await sqlRun(env.writerUrl, communityId, shape, WARMUP);
  collectGarbage();
  const sql = await metered(env, () => sqlRun(env.writerUrl, communityId, shape, REQS));
  const relaySql = await metered(env, () => sqlRun(env.writerUrl, communityId, shape, REQS, 'relay'));
  const expected = await firstSqlIds(env.writerUrl, communityId, shape);
  if (relay.bad.length > 0) throw new Error(`${shape.name}: ${relay.bad.length} REQs ended badly, e.g. ${relay.bad[0]}`);
  if (JSON.stringify(relay.firstIds) !== JSON.stringify(expected)) throw new Error(`${shape.name}: relay and SQL disagree on the first page`);
  return { relay, gc, samples: relay.samples, sql, relaySql };
}

/**
 * BENCH_SAMPLES=<file>: every measured closed-loop REQ as a CSV line `shape,connection,sent_ms,latency_ms`
 * (sent_ms on the bench's performance.now() clock), to tell a tail made of a few stalls, when every
 * connection waits at once, from one spread over the run.
 */
const samplesOut = process.env.BENCH_SAMPLES ? createWriteStream(process.env.BENCH_SAMPLES) : undefined;
samplesOut?.write('shape,connection,sent_ms,latency_ms\n');
function writeSamples(shape: string, samples: readonly [number, number, number][]): void {
  if (!samplesOut) return;
  samplesOut.write(samples.map(([c, at, ms]) => `${shape},${c},${round(at, 3)},${round(ms, 3)}\n`).join(''));
}

/** A statement name per distinct SQL text (the shapes differ in text, not only in values). */
const shapeKeys = new Map<string, number>();
function shapeKey(text: string): number {
  if (!shapeKeys.has(text)) shapeKeys.set(text, shapeKeys.size);
  return shapeKeys.get(text)!;
}

/** Request `i` of an open-loop run: connection `i % CONNECTIONS`, shape `i % 4`. */
function openRequest(allShapes: readonly Shape[], i: number): { c: number; filter: BenchFilter } {
  const c = i % CONNECTIONS;
  return { c, filter: allShapes[i % allShapes.length].filter(c, Math.floor(i / CONNECTIONS)) };
}

async function openLoopLine(env: BenchEnv, conns: readonly BenchConnection[], communityId: string, allShapes: readonly Shape[], rate: number, seconds: number) {
  const relay = await metered(env, async () => {
    const run = await runOpenLoop(rate, seconds, async (i) => {
      const { c, filter } = openRequest(allShapes, i);
      const res = await conns[c].req(`o${i}`, filter);
      conns[c].closeSubscription(`o${i}`);
      return res.end === 'EOSE' && res.ids.length === LIMIT ? undefined : `${res.end} ${res.reason ?? ''} after ${res.ids.length} events`;
    });
    return { ...run, seconds: run.latenciesMs.length / run.achievedPerS };
  });
  if (relay.failures.length > 0) throw new Error(`open loop at ${rate}/s: ${relay.failures.length} REQs ended badly, e.g. ${relay.failures[0]}`);
  const clients = await connectClients(env.writerUrl, CONNECTIONS);
  // One statement in flight per connection, as on a relay connection; later ones wait their turn.
  const tails: Promise<unknown>[] = clients.map(() => Promise.resolve());
  // Named (prepared) statements, as the relay runs them: the baseline is what the database costs.
  const queued = (c: number, text: string, params: unknown[]) => {
    const result = tails[c].then(() => clients[c].query({ name: `open_${shapeKey(text)}`, text, values: params }));
    tails[c] = result.catch(() => undefined);
    return result;
  };
  const sql = await metered(env, async () => {
    const run = await runOpenLoop(rate, seconds, async (i) => {
      const { c, filter } = openRequest(allShapes, i);
      const [text, params] = sqlFor(communityId, filter);
      const { rows } = await queued(c, text, params);
      return rows.length === LIMIT ? undefined : `${rows.length} rows`;
    });
    return { ...run, seconds: run.latenciesMs.length / run.achievedPerS };
  }).finally(() => closeClients(clients));
  const r = summarize(relay.latenciesMs);
  const b = summarize(sql.latenciesMs);
  return {
    bench: 'req',
    variant: `open_${rate}`,
    seed_events: SEED,
    channel_messages: CHANNEL_MESSAGES,
    connections: CONNECTIONS,
    limit: LIMIT,
    offered_reqs_per_s: rate,
    reqs: relay.latenciesMs.length,
    reqs_per_s: round(relay.achievedPerS, 1),
    eose_p50_ms: r.p50,
    eose_p90_ms: r.p90,
    eose_p99_ms: r.p99,
    eose_max_ms: r.max,
    baseline_queries_per_s: round(sql.achievedPerS, 1),
    baseline_p50_ms: b.p50,
    baseline_p90_ms: b.p90,
    baseline_p99_ms: b.p99,
    p99_ratio: round(r.p99 / b.p99, 3),
    relay_cpu_ms_per_req: perItem(relay.cpu.relay, relay),
    pg_cpu_ms_per_req: perItem(relay.cpu.postgres, relay),
    client_cpu_ms_per_req: perItem(relay.cpu.client, relay),
  };
}

function fail(message: string): never {
  throw new Error(message);
}

function emptyTimed(): Timed {
  return { seconds: 0, latenciesMs: [], cpu: { relay: 0, postgres: 0, client: 0 } };
}

/**
 * The relay's RSS (MB) once the clients closed, and after REST_SECONDS idle when asked, with what
 * the V8 heap held then (committed new and old space, used heap, external memory; prom-client's
 * default families), so the rest of RSS is the workers, native allocations and the binary.
 */
async function memoryLine(env: BenchEnv): Promise<Record<string, unknown>> {
  const mb = (field: 'VmRSS' | 'VmHWM') => round(procStatusBytes(env.relayPid, field) / 1048576, 1);
  const after = mb('VmRSS');
  const peak = mb('VmHWM');
  if (REST_SECONDS <= 0) return { bench: 'req', variant: 'memory', relay_rss_after_mb: after, relay_rss_peak_mb: peak };
  await new Promise((resolve) => setTimeout(resolve, REST_SECONDS * 1000));
  const heap = async (name: string, label?: string) => round((await podMetric(env.relayUrl, name, label)) / 1048576, 1);
  return {
    bench: 'req',
    variant: 'memory',
    relay_rss_after_mb: after,
    relay_rss_peak_mb: peak,
    rest_s: REST_SECONDS,
    relay_rss_rest_mb: mb('VmRSS'),
    rest_heap_new_mb: await heap('nodejs_heap_space_size_total_bytes', 'space="new"'),
    rest_heap_old_mb: await heap('nodejs_heap_space_size_total_bytes', 'space="old"'),
    rest_heap_used_mb: await heap('nodejs_heap_size_used_bytes'),
    rest_external_mb: await heap('nodejs_external_memory_bytes'),
  };
}

/** Adds one run's requests, time and CPU to a running total. */
function addTimed(into: Timed, run: Timed): void {
  into.seconds += run.seconds;
  into.latenciesMs.push(...run.latenciesMs);
  into.cpu = { relay: into.cpu.relay + run.cpu.relay, postgres: into.cpu.postgres + run.cpu.postgres, client: into.cpu.client + run.cpu.client };
}

/** One shape against a peer: its warm-up, then the measured run, by the relay's own loop. */
async function peerShape(peer: Peer, shape: Shape): Promise<Timed> {
  await relayRun(peer.conns, shape, WARMUP, true);
  collectGarbage();
  const run = await metered(peer.env, () => relayRun(peer.conns, shape, REQS, true));
  if (run.bad.length > 0) throw new Error(`${peer.name} ${shape.name}: ${run.bad.length} REQs ended badly, e.g. ${run.bad[0]}`);
  return run;
}

function peerLine(peer: Peer, shape: string, run: Timed, relayPerS: number | undefined) {
  const perS = run.latenciesMs.length / run.seconds;
  const r = summarize(run.latenciesMs);
  return {
    bench: 'req',
    variant: `${peer.name}_${shape}`,
    connections: CONNECTIONS,
    limit: LIMIT,
    reqs: run.latenciesMs.length,
    reqs_per_s: round(perS, 1),
    eose_p50_ms: r.p50,
    eose_p90_ms: r.p90,
    eose_p99_ms: r.p99,
    eose_max_ms: r.max,
    peer_cpu_ms_per_req: perItem(run.cpu.relay, run),
    pg_cpu_ms_per_req: perItem(run.cpu.postgres, run),
    relay_reqs_per_s: relayPerS ?? null,
    relay_ratio: relayPerS === undefined ? null : round(relayPerS / perS, 3),
  };
}

/** The peer lines: every shape as the relay ran them (the first once more, discarded, as for the relay), then `all`. */
async function peerLines(name: PeerName, events: readonly NostrEvent[], allShapes: readonly Shape[], relayRates: ReadonlyMap<string, number>): Promise<void> {
  const peer = await startPeer(name, events, CONNECTIONS, PUBLISH_WINDOW);
  try {
    await peerShape(peer, allShapes[0]);
    const all = emptyTimed();
    for (const shape of allShapes) {
      const run = await peerShape(peer, shape);
      console.log(JSON.stringify(peerLine(peer, shape.name, run, relayRates.get(shape.name))));
      addTimed(all, run);
    }
    console.log(JSON.stringify(peerLine(peer, 'all', all, relayRates.get('all'))));
  } catch (err) {
    logLine(`${name} output:\n${peer.env.relayOutput()}`);
    throw err;
  } finally {
    await stopPeer(peer);
  }
}

async function main(): Promise<void> {
  const env = await startBenchEnv(); // first: a relay that cannot start fails the run at once
  let seeded: NostrEvent[] = [];
  let allShapes: Shape[] = [];
  const relayRates = new Map<string, number>();
  try {
    const keys = Array.from({ length: CONNECTIONS }, () => generateSecretKey());
    const channels = Array.from({ length: CHANNELS }, () => randomUUID());
    const conns = await Promise.all(keys.map((sk) => BenchConnection.open(env.relayUrl, sk)));
    await createChannels(conns[0], keys[0], channels);
    seeded = await signAndSeed(env, conns, keys, channels);
    const communityId = await communityOf(env.writerUrl);
    const all: ShapeResult = { relay: emptyTimed(), gc: NO_GC, samples: [], sql: emptyTimed(), relaySql: emptyTimed() };
    // In the order given, repeats allowed (`--shapes tag,kinds,tag` shows what running first does).
    const known = shapes(keys.map((k) => getPublicKey(k)), channels);
    allShapes = SHAPES.map((name) => known.find((s) => s.name === name) ?? fail(`--shapes: ${name} is not one of ${known.map((s) => s.name).join(', ')}`));
    // One whole pass of the first shape, discarded. Whichever shape was measured first showed
    // about three times the client CPU per REQ of the later ones, with more relay and Postgres CPU
    // and a higher p99, even after a forced collection in the bench and a 30 s pause after
    // seeding; measured again straight after, the same shape did not. The cause was not found.
    await measureShape(env, conns, communityId, allShapes[0]);
    const overTime: TimedPoint[] = [];
    const distribution: SeriesSample[] = [];
    for (const shape of allShapes) {
      const result = await measureShape(env, conns, communityId, shape);
      const line = resultLine(shape.name, result);
      relayRates.set(shape.name, line.reqs_per_s);
      console.log(JSON.stringify(line));
      const t0 = Math.min(...result.samples.map(([, sentAt]) => sentAt));
      for (const [, sentAt, ms] of result.samples) overTime.push({ t: round((sentAt - t0) / 1000, 3), ms: round(ms, 3), series: shape.name });
      for (const ms of result.relay.latenciesMs) distribution.push({ series: `relay ${shape.name}`, ms });
      for (const ms of result.sql.latenciesMs) distribution.push({ series: `SQL ${shape.name}`, ms });
      writeSamples(shape.name, result.samples);
      all.gc = gcCombine(all.gc, result.gc, 1);
      for (const key of ['relay', 'sql', 'relaySql'] as const) addTimed(all[key], result[key]);
    }
    const allLine = resultLine('all', all);
    relayRates.set('all', allLine.reqs_per_s);
    console.log(JSON.stringify(allLine));
    const dir = chartsDir(args.charts, 'req');
    if (dir !== undefined) {
      const title = `${CONNECTIONS} connections, REQ to EOSE, limit ${LIMIT}`;
      const charts = [
        { name: 'req-latency-over-time', spec: latencyOverTime(`closed-loop REQ latency per shape over its run (${title})`, overTime) },
        { name: 'req-latency', spec: latencyCdf(`REQ latency, relay and the same SQL (${title})`, distribution) },
      ];
      logLine(`charts: ${(await writeCharts(dir, charts)).join(', ')}`);
    }
    if (RATES.length > 0) {
      // Unmeasured, at the highest rate: on this VM the first sustained open-loop run of a fresh
      // relay showed stalls of hundreds of ms that later runs at the same rate did not.
      logLine(`open-loop warm-up: ${OPEN_WARMUP_SECONDS} s at ${Math.max(...RATES)}/s`);
      await openLoopLine(env, conns, communityId, allShapes, Math.max(...RATES), OPEN_WARMUP_SECONDS);
    }
    for (const rate of RATES) console.log(JSON.stringify(await openLoopLine(env, conns, communityId, allShapes, rate, OPEN_SECONDS)));
    conns.forEach((c) => c.close());
    console.log(JSON.stringify(await memoryLine(env)));
  } catch (err) {
    logLine(`relay output:\n${env.relayOutput()}`);
    throw err;
  } finally {
    await env.stop();
  }
  for (const name of PEER_NAMES) await peerLines(name, seeded, allShapes, relayRates);
}

runBench(main);
