/**
 * Issue 17: a reconnect storm against the built relay on a real Postgres writer + streaming
 * replica (BUZZ_REPLICA_READ_MAX_AGE_MS=2000, default pools, quotas lifted by bench-env).
 *
 * 6,000 kind-1 events are stored (published through the relay, then vacuumed and replicated).
 * One publisher sends a kind-1 EVENT every 100 ms from `--pre-seconds` before the storm until
 * `--post-seconds` after it. Then `--clients` WebSocket clients connect at once; each answers the
 * NIP-42 challenge with its own key and sends one REQ `{"kinds":[1],"limit":50}`. A client that
 * gets a retryable CLOSED (`error: …`) sends the REQ again after 250 ms × 2^attempt, jittered to
 * ±50 %, at most 6 times. The storm ends when every client has an outcome (served, dropped,
 * refused, gave up, or no outcome after `--client-deadline-seconds`); served clients keep their
 * live subscription open until then, so the publisher's events fan out to them.
 *
 * Read from the relay: /metrics before and after the storm (route decisions, writer-pool acquire
 * waits, and prom-client's `nodejs_eventloop_lag_*` gauges, which read the relay's
 * perf_hooks.monitorEventLoopDelay histogram and reset it at every scrape: the bench scrapes once
 * when the publisher starts, once when the storm starts and once when it ends, so the figures
 * after each scrape cover exactly the pre-storm window and the storm), its RSS from /proc every
 * 100 ms, its CPU time and the Postgres pair's and the bench's own (/proc) over the storm, and its
 * log lines during the storm.
 *
 * Baselines, in the same run:
 * - within each variant, the publisher's `OK` p99 before the storm is the baseline for its p99
 *   during the storm (and the pre-storm event-loop delay for the storm's);
 * - variant `spill` repeats the storm on a fresh pair against bench/lib/spill-relay.ts (the
 *   bench-only relay entry: no history-read gate, reads that miss the reader's budget go to the
 *   writer). `--variants relay` skips it.
 * - variant `nostream` runs the same storm against nostream (lib/nostream.ts: a checkout named by
 *   NOSTREAM_DIR) on a fresh pair's writer, the relay issue 17's storm-time goal is set against.
 *   nostream sends no NIP-42 challenge, so its clients and publisher send their frames
 *   unauthenticated; it has no /metrics, so the relay-side figures are absent. Skipped, with a
 *   message, when NOSTREAM_DIR is not set.
 *
 * The storm's clients run in a child process (lib/storm-clients.ts), at `--clients-nice` (0 by
 * default; 19 lets the relay and the publisher have the cores first, as when the clients are on
 * other machines). The publisher stays on a worker thread of the bench at normal priority.
 *
 *   npm run bench:storm -- [--clients 1000] [--variants relay,spill,nostream] [--seed 6000]
 *     [--pre-seconds 5] [--post-seconds 2] [--client-deadline-seconds 60] [--clients-nice 0]
 *     [--clients-cpu-prof DIR] [--charts DIR]
 *
 * One JSON line per variant on stdout (and a comparison line when both ran); progress on stderr.
 * Needs `ulimit -n` above clients + 256 (the relay inherits the bench's limit).
 */
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { Worker } from 'node:worker_threads';
import { BenchConnection, toPublishItems } from './lib/bench-connection.js';
import type { PublisherWorkerData, PublishRecordAbs } from './lib/storm-publisher.worker.js';
import { logLine, quietPool, RELAY_ENTRY, round, runBench, SPILL_RELAY_ENTRY, startBenchEnv, summarize, type BenchEnv } from './lib/bench-env.js';
import { fastSigner } from './lib/fast-sign.js';
import { cpuSince, processTree, sampleCpu } from './lib/cpu-usage.js';
import { metricsText } from './lib/pod-metrics.js';
import type { StormOutcome } from './lib/storm-client.js';
import { startStormClients, type StormClients } from './lib/storm-clients.js';
import { nostreamDir, startNostreamEnv } from './lib/nostream.js';
import { chartsDir, chartsOption, latencyCdf, latencyOverTime, outcomeBars, writeCharts, type Chart, type PhaseMark } from './lib/charts.js';
import { bucketDelta, counterDelta, countBy, deltaBy, histogramQuantile, parseSamples, sumOf, tallyLogLines, type Sample } from './lib/storm-stats.js';

const { values: args } = parseArgs({
  options: {
    clients: { type: 'string', default: '1000' },
    seed: { type: 'string', default: '6000' },
    variants: { type: 'string', default: 'relay,spill' },
    'pre-seconds': { type: 'string', default: '5' },
    'post-seconds': { type: 'string', default: '2' },
    'client-deadline-seconds': { type: 'string', default: '60' },
    'clients-nice': { type: 'string', default: '0' },
    'clients-cpu-prof': { type: 'string' },
    ...chartsOption,
  },
});
const CLIENTS = Number(args.clients);
const SEED = Number(args.seed);
const PRE_MS = Number(args['pre-seconds']) * 1000;
const POST_MS = Number(args['post-seconds']) * 1000;
const CLIENT_DEADLINE_MS = Number(args['client-deadline-seconds']) * 1000;
const CLIENTS_NICE = Number(args['clients-nice']);
const HISTORY_FILTER = { kinds: [1], limit: 50 };
const MAX_RETRIES = 6;
const BACKOFF_BASE_MS = 250;
const PUBLISH_EVERY_MS = 100;
const SEED_WINDOW = 64;
/** How long the publisher's last events may take to be answered before they count as unanswered. */
const OK_WAIT_MS = 15_000;
const RSS_EVERY_MS = 100;

/** Relay environment per variant (on top of the bench's own BUZZ_* variables). */
const VARIANTS: Record<string, Record<string, string>> = {
  relay: {},
  spill: {},
  nostream: {},
};
/** Variants whose server answers NIP-42 and serves the relay's /metrics. */
const isBuzz = (name: string) => name !== 'nostream';

/** Runs fn with `vars` added to process.env (bench-env passes BUZZ_* on to the relay); the bench's own settings win. */
async function withEnv<T>(vars: Record<string, string>, fn: () => Promise<T>): Promise<T> {
  const added = Object.keys(vars).filter((k) => process.env[k] === undefined);
  for (const k of added) process.env[k] = vars[k];
  try {
    return await fn();
  } finally {
    for (const k of added) delete process.env[k];
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function openFileLimit(): number {
  const m = /^Max open files\s+(\S+)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
  return !m || m[1] === 'unlimited' ? Number.POSITIVE_INFINITY : Number(m[1]);
}

/** Kind-1 history published through the relay by one key, then vacuumed and replicated. */
async function seedHistory(env: BenchEnv, auth: boolean): Promise<void> {
  const signer = fastSigner();
  const conn = auth ? await BenchConnection.open(env.relayUrl, signer.sk) : await BenchConnection.openUnauthenticated(env.relayUrl);
  const events = Array.from({ length: SEED }, (_, i) => signer.sign(1, [['t', 'storm']], `stored note ${i}: the quick brown fox jumps over the lazy dog`));
  const result = await conn.publishWindowed(toPublishItems(events), SEED_WINDOW);
  conn.close();
  if (result.accepted !== SEED) throw new Error(`seeding: ${result.accepted}/${SEED} accepted: ${JSON.stringify(Object.fromEntries(result.reasons))}`);
  const pool = quietPool(env.writerUrl, 1);
  try {
    await pool.query('vacuum (analyze) events');
  } finally {
    await pool.end();
  }
  await env.cluster.waitForReplica(60_000);
}

interface PublishRecord {
  sentAt: number;
  ms: number;
  /** '' when accepted, the OK message when refused, `unanswered` or the socket error otherwise. */
  outcome: string;
}

/**
 * One key publishing a kind-1 EVENT every PUBLISH_EVERY_MS until stopped, on its own worker thread
 * (lib/storm-publisher.worker.ts says why); its records come back on the main thread's clock.
 */
async function startPublisher(env: BenchEnv, auth: boolean): Promise<{ stop(): Promise<PublishRecord[]> }> {
  const data: PublisherWorkerData = { relayUrl: env.relayUrl, everyMs: PUBLISH_EVERY_MS, okWaitMs: OK_WAIT_MS, auth };
  const worker = new Worker(new URL('./lib/storm-publisher.worker.js', import.meta.url), { workerData: data });
  const next = (type: string) =>
    new Promise<{ type: string; records?: PublishRecordAbs[] }>((resolve, reject) => {
      const onMessage = (m: { type: string; records?: PublishRecordAbs[] }) => {
        if (m.type !== type) return;
        worker.off('message', onMessage);
        resolve(m);
      };
      worker.on('message', onMessage);
      worker.once('error', reject);
    });
  await next('started');
  return {
    stop: async () => {
      const done = next('records');
      worker.postMessage({ type: 'stop' });
      const { records = [] } = await done;
      await worker.terminate();
      return records.map((r) => ({ sentAt: r.sentAtAbsMs - performance.timeOrigin, ms: r.ms, outcome: r.outcome }));
    },
  };
}

/** The resident set from /proc (bytes) of pid and its child processes (nostream's workers); 0 if gone. */
function procStatusBytes(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  return processTree(pid).reduce((sum, p) => {
    try {
      const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${p}/status`, 'utf8'));
      return sum + (m ? Number(m[1]) * 1024 : 0);
    } catch {
      return sum;
    }
  }, 0);
}

function startRssSampler(pid: number): () => number {
  let peak = procStatusBytes(pid, 'VmRSS');
  const timer = setInterval(() => (peak = Math.max(peak, procStatusBytes(pid, 'VmRSS'))), RSS_EVERY_MS);
  return () => {
    clearInterval(timer);
    return Math.max(peak, procStatusBytes(pid, 'VmRSS'));
  };
}

async function scrape(env: BenchEnv): Promise<Sample[]> {
  const samples = parseSamples(await metricsText(env.relayUrl));
  if (samples.length === 0) throw new Error('the relay did not answer /metrics');
  return samples;
}

interface Storm {
  outcomes: StormOutcome[];
  /** On this process's performance.now() clock. */
  startedAt: number;
  endedAt: number;
  clientCpuSeconds: number;
  clientCpuProfile?: string;
}

async function storm(clients: StormClients): Promise<Storm> {
  const run = await clients.storm();
  return {
    outcomes: run.outcomes,
    startedAt: run.startedAtAbs - performance.timeOrigin,
    endedAt: run.endedAtAbs - performance.timeOrigin,
    clientCpuSeconds: run.cpuSeconds,
    clientCpuProfile: run.cpuProfile,
  };
}

const ms = (seconds: number) => round(seconds * 1000);
const mb = (bytes: number) => round(bytes / 2 ** 20, 1);

async function startVariantEnv(name: string): Promise<BenchEnv> {
  if (name === 'nostream') {
    const found = nostreamDir();
    if ('missing' in found) throw new Error(found.missing);
    return startNostreamEnv(found.dir);
  }
  const relayEnv: Record<string, string> = { BUZZ_REPLICA_READ_MAX_AGE_MS: '2000', ...VARIANTS[name] };
  if (CLIENTS + 64 > 10_000) relayEnv.BUZZ_MAX_CONNECTIONS = String(CLIENTS + 64);
  return withEnv(relayEnv, () => startBenchEnv(logLine, name === 'spill' ? SPILL_RELAY_ENTRY : RELAY_ENTRY));
}

async function runVariant(name: string): Promise<Record<string, unknown>> {
  const buzz = isBuzz(name);
  const env = await startVariantEnv(name);
  let clients: StormClients | undefined;
  try {
    await seedHistory(env, buzz);
    clients = await startStormClients(
      {
        relayUrl: env.relayUrl,
        clients: CLIENTS,
        auth: buzz,
        filter: HISTORY_FILTER,
        maxRetries: MAX_RETRIES,
        backoffBaseMs: BACKOFF_BASE_MS,
        deadlineMs: CLIENT_DEADLINE_MS,
        cpuProfileDir: args['clients-cpu-prof'],
      },
      CLIENTS_NICE,
    );
    logLine(`${name}: ${SEED} events stored; publisher on, ${PRE_MS / 1000} s before the storm`);
    const publisher = await startPublisher(env, buzz);
    if (buzz) await scrape(env); // starts the pre-storm event-loop window
    await sleep(PRE_MS);
    const m0 = buzz ? await scrape(env) : [];
    const logFrom = env.relayOutput().length;
    const stopRss = startRssSampler(env.relayPid);
    const cpu0 = sampleCpu(env.relayPid, env.cluster.baseDir);
    logLine(`${name}: ${CLIENTS} clients connect (client process nice ${CLIENTS_NICE})`);
    const s = await storm(clients);
    const cpu = cpuSince(cpu0, sampleCpu(env.relayPid, env.cluster.baseDir));
    const m1 = buzz ? await scrape(env) : [];
    logLine(`${name}: storm over in ${round((s.endedAt - s.startedAt) / 1000, 1)} s; publisher goes on ${POST_MS / 1000} s`);
    await sleep(POST_MS);
    const rssPeak = stopRss();
    const published = await publisher.stop();
    const relayLog = tallyLogLines(env.relayOutput().slice(logFrom));
    await clients.close();
    chartData.set(name, { storm: s, published });
    return {
      bench: 'storm',
      variant: name === 'spill' ? 'spill (bench/lib/spill-relay.ts)' : name,
      clients: CLIENTS,
      stored_events: SEED,
      clients_process: { nice: CLIENTS_NICE, auth: buzz ? 'NIP-42' : 'none (the relay sends no challenge)' },
      ...clientFigures(s),
      ...publisherFigures(published, s),
      ...(buzz ? relayFigures(m0, m1) : {}),
      cpu_s_relay: round(cpu.relay),
      cpu_s_postgres: round(cpu.postgres),
      cpu_s_clients: round(s.clientCpuSeconds),
      cpu_s_bench: round(cpu.client),
      ...(s.clientCpuProfile ? { clients_cpu_profile: s.clientCpuProfile } : {}),
      rss_peak_mb: mb(rssPeak),
      rss_high_water_mb: mb(procStatusBytes(env.relayPid, 'VmHWM')),
      relay_log: relayLog,
    };
  } catch (err) {
    logLine(env.relayOutput().slice(-4000));
    throw err;
  } finally {
    await clients?.close();
    await env.stop();
  }
}

function clientFigures(s: Storm) {
  const served = s.outcomes.filter((o) => o.result === 'served');
  const eose = summarize(served.map((o) => o.eoseMs!));
  const authed = s.outcomes.filter((o) => o.authMs !== undefined);
  const notServed = s.outcomes.filter((o) => o.result !== 'served');
  return {
    served: served.length,
    served_after_retry: served.filter((o) => o.retries > 0).length,
    retries: s.outcomes.reduce((n, o) => n + o.retries, 0),
    dropped: s.outcomes.filter((o) => o.result === 'dropped').length,
    refused: s.outcomes.filter((o) => o.result === 'refused').length,
    gave_up: s.outcomes.filter((o) => o.result === 'gave_up').length,
    unfinished: s.outcomes.filter((o) => o.result === 'unfinished').length,
    /** Served with fewer than `limit` events (6,000 are stored: every page should be full). */
    short_histories: served.filter((o) => o.events < HISTORY_FILTER.limit).length,
    storm_s: round((s.endedAt - s.startedAt) / 1000),
    time_to_eose_p50_ms: eose.p50,
    time_to_eose_p99_ms: eose.p99,
    time_to_eose_max_ms: eose.max,
    auth_p99_ms: summarize(authed.map((o) => o.authMs!)).p99,
    retry_reasons: countBy(s.outcomes.flatMap((o) => o.retryReasons)),
    not_served: countBy(notServed.map((o) => `${o.result} at ${o.stage}: ${o.detail ?? ''}`)),
  };
}

function publisherFigures(records: readonly PublishRecord[], s: Storm) {
  const before = records.filter((r) => r.sentAt < s.startedAt);
  const during = records.filter((r) => r.sentAt >= s.startedAt && r.sentAt <= s.endedAt);
  const p99 = (rs: readonly PublishRecord[]) => summarize(rs.filter((r) => !Number.isNaN(r.ms)).map((r) => r.ms));
  const failed = records.filter((r) => r.outcome !== '');
  return {
    publisher_sent: records.length,
    publisher_sent_during: during.length,
    publisher_refused: failed.length,
    publisher_ok_p99_before_ms: p99(before).p99,
    publisher_ok_p99_during_ms: p99(during).p99,
    publisher_ok_max_during_ms: p99(during).max,
    publisher_refusals: countBy(failed.map((r) => r.outcome)),
  };
}

const WRITER_ACQUIRE = 'buzz_db_pool_acquire_duration_seconds';
const WRITER_ACQUIRE_LEGACY = 'buzz_db_pool_acquire_wait_seconds';

/**
 * The storm's deltas between scrapes m0 and m1; the event loop's windows end at m0 and m1. The
 * writer's acquire family covers the seams DatabaseService instruments (writer reads through the
 * RoutedReader, authorization, authentication): event writes go through Kysely's pool and are not
 * in it, so their pool wait shows only in the publisher's OK latency.
 */
function relayFigures(m0: readonly Sample[], m1: readonly Sample[]) {
  const route = 'buzz_db_route_decision';
  let acquire = bucketDelta(m0, m1, WRITER_ACQUIRE, { pool_role: 'writer' });
  if ((acquire.at(-1)?.count ?? 0) === 0) acquire = bucketDelta(m0, m1, WRITER_ACQUIRE_LEGACY, { pool_role: 'writer' });
  const loop = (samples: readonly Sample[], q: string) => ms(sumOf(samples, `nodejs_eventloop_lag_${q}_seconds`));
  return {
    history_reads_on_writer: counterDelta(m0, m1, route, { path: 'req_historical', decision: 'writer' }),
    history_reads_on_replica: counterDelta(m0, m1, route, { path: 'req_historical', decision: 'replica' }),
    history_reads_shed: counterDelta(m0, m1, route, { path: 'req_historical', decision: 'rejected' }),
    auth_outcomes: deltaBy(m0, m1, 'buzz_auth_outcomes_total', {}, ['outcome']),
    auth_deadline_closes: counterDelta(m0, m1, 'buzz_ws_auth_timeouts_total'),
    route_writer: deltaBy(m0, m1, route, { decision: 'writer' }, ['path', 'reason']),
    route_rejected: deltaBy(m0, m1, route, { decision: 'rejected' }, ['path', 'reason']),
    writer_acquire_wait_p99_ms: ms(histogramQuantile(0.99, acquire)),
    writer_acquires: acquire.at(-1)?.count ?? 0,
    writer_acquire_outcomes: deltaBy(m0, m1, 'buzz_db_pool_acquire_attempts_total', { pool_role: 'writer' }, ['operation', 'outcome']),
    event_loop_delay_p99_before_ms: loop(m0, 'p99'),
    event_loop_delay_max_before_ms: loop(m0, 'max'),
    event_loop_delay_p50_ms: loop(m1, 'p50'),
    event_loop_delay_p99_ms: loop(m1, 'p99'),
    event_loop_delay_max_ms: loop(m1, 'max'),
  };
}

/** Per variant, what the charts draw (kept out of the JSON lines). */
const chartData = new Map<string, { storm: Storm; published: PublishRecord[] }>();

const OUTCOMES = ['served first try', 'served after retries', 'dropped', 'refused', 'gave up', 'unfinished'] as const;

function outcomeOf(o: StormOutcome): (typeof OUTCOMES)[number] {
  if (o.result === 'served') return o.retries === 0 ? 'served first try' : 'served after retries';
  return o.result === 'gave_up' ? 'gave up' : o.result;
}

/**
 * The storm's charts: the publisher's OK latency over time in every variant (time 0 is the
 * storm's start, the dashed rules its end per variant), time to EOSE per client as a
 * distribution, and the clients' outcomes.
 */
function stormCharts(): Chart[] {
  const points = [];
  const marks: PhaseMark[] = [{ t: 0, label: 'storm starts' }];
  const eose = [];
  const rows = [];
  for (const [variant, { storm: s, published }] of chartData) {
    for (const r of published) if (!Number.isNaN(r.ms)) points.push({ t: round((r.sentAt - s.startedAt) / 1000, 3), ms: round(r.ms, 2), series: variant });
    marks.push({ t: round((s.endedAt - s.startedAt) / 1000, 3), label: `${variant} ends` });
    for (const o of s.outcomes) if (o.eoseMs !== undefined) eose.push({ series: variant, ms: round(o.eoseMs, 1) });
    for (const outcome of OUTCOMES) rows.push({ group: variant, category: outcome, count: s.outcomes.filter((o) => outcomeOf(o) === outcome).length });
  }
  return [
    { name: 'storm-publisher-ok', spec: latencyOverTime(`publisher OK latency, ${CLIENTS} clients' storm from t = 0`, points, marks, 'OK latency (ms)') },
    { name: 'storm-time-to-eose', spec: latencyCdf(`time from connect to EOSE per client (${CLIENTS} clients)`, eose) },
    { name: 'storm-outcomes', spec: outcomeBars(`storm outcomes per client (${CLIENTS} clients)`, rows, OUTCOMES) },
  ];
}

/** The issue's figure for nostream 2.0.0 on its machine, used when nostream did not run before. */
const ISSUE_NOSTREAM_STORM_S = 5.9;

/**
 * Issue 17's goals for 1,000 clients. The storm bound is half of nostream's storm: the one
 * measured earlier in this run when there was one (`--variants nostream,relay`), else the issue's.
 */
function goals(line: Record<string, unknown>, nostreamStormS: number | undefined): Record<string, boolean | number | string> {
  const n = (k: string) => Number(line[k]);
  const bound = round((nostreamStormS ?? ISSUE_NOSTREAM_STORM_S) / 2);
  return {
    all_served: n('served') === n('clients'),
    none_dropped: n('dropped') === 0,
    no_publisher_refusal: n('publisher_refused') === 0,
    no_history_on_writer: n('history_reads_on_writer') === 0,
    retries_le_50: n('retries') <= 50,
    storm_bound_s: bound,
    storm_bound_from: nostreamStormS === undefined ? 'issue 17 (nostream 5.9 s; none in this run that served every client)' : 'nostream in this run',
    storm_le_half_nostream: n('storm_s') <= bound,
    publisher_ok_p99_during_le_250_ms: n('publisher_ok_p99_during_ms') <= 250,
  };
}

async function main(): Promise<number> {
  const limit = openFileLimit();
  if (limit < CLIENTS + 256) throw new Error(`open-file limit ${limit} is too low for ${CLIENTS} clients: raise it (ulimit -n ${CLIENTS + 1024}) and run again`);
  let names = args.variants.split(',').filter(Boolean);
  for (const n of names) if (!(n in VARIANTS)) throw new Error(`unknown variant ${n} (known: ${Object.keys(VARIANTS).join(', ')})`);
  const nostream = nostreamDir();
  if (names.includes('nostream') && 'missing' in nostream) {
    logLine(`variant nostream skipped: ${nostream.missing}`);
    names = names.filter((n) => n !== 'nostream');
  }
  const lines: Array<Record<string, unknown>> = [];
  for (const name of names) {
    const line = await runVariant(name);
    // nostream's storm bounds the relay's only when it served every client (else it ended at the client deadline)
    const nostreamLine = lines.find((l) => l.variant === 'nostream' && l.served === l.clients);
    if (isBuzz(name)) line.goals = goals(line, nostreamLine?.storm_s as number | undefined);
    console.log(JSON.stringify(line));
    lines.push(line);
  }
  const dir = chartsDir(args.charts, 'storm');
  if (dir !== undefined && chartData.size > 0) logLine(`charts: ${(await writeCharts(dir, stormCharts())).join(', ')}`);
  const [a, ...others] = lines;
  for (const b of others) {
    const ratio = (k: string) => round(Number(a[k]) / Number(b[k]));
    console.log(
      JSON.stringify({
        bench: 'storm',
        variant: `${String(a.variant)} / ${String(b.variant)}`,
        storm_s_ratio: ratio('storm_s'),
        time_to_eose_p99_ratio: ratio('time_to_eose_p99_ms'),
        publisher_ok_p99_during_ratio: ratio('publisher_ok_p99_during_ms'),
        cpu_s_relay_ratio: ratio('cpu_s_relay'),
        ...(isBuzz(String(a.variant)) && isBuzz(String(b.variant)) ? { writer_acquire_wait_p99_ratio: ratio('writer_acquire_wait_p99_ms'), event_loop_delay_p99_ratio: ratio('event_loop_delay_p99_ms') } : {}),
      }),
    );
  }
  return 0;
}

runBench(main);
