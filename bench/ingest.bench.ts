/**
 * Ingest throughput: signed kind-1 events published over authenticated WebSocket connections,
 * each connection keeping a bounded window of events without an OK, against the built relay on a
 * real Postgres writer + streaming replica. Baseline in the same run, on the same cluster: the
 * same rows inserted straight into Postgres by plain `pg` clients, one autocommit INSERT per row,
 * one client per relay connection. Prints one JSON line; progress goes to stderr.
 *
 *   npm run build && node dist/bench/ingest.bench.js [--events 20000] [--connections 8] [--window 64] [--warmup 400]
 *
 * Events are signed (nostr-tools finalizeEvent, on worker threads) before anything is timed.
 * Afterwards the bench checks that the stored rows equal the accepted OKs (exit 1 otherwise).
 */
import { parseArgs } from 'node:util';
import type { Client } from 'pg';
import { generateSecretKey, getPublicKey, type Event as NostrEvent, type EventTemplate } from 'nostr-tools/pure';
import { BenchConnection, mergePublishResults, toPublishItems, type PublishResult } from './lib/bench-connection.js';
import { BenchEnv, logLine, quietPool, round, secondsSince, startBenchEnv, summarize, runBench } from './lib/bench-env.js';
import { chartsDir, chartsOption, latencyCdf, writeCharts } from './lib/charts.js';
import { cpuSince, sampleCpu, type CpuSample } from './lib/cpu-usage.js';
import { signInParallel, type SignJob } from './lib/sign-pool.js';
import { dealRoundRobin, runSqlClients, type SqlRunResult } from './lib/sql-baseline.js';

const { values: args } = parseArgs({
  options: {
    events: { type: 'string', default: '20000' },
    connections: { type: 'string', default: '8' },
    window: { type: 'string', default: '64' },
    warmup: { type: 'string', default: '400' },
    ...chartsOption,
  },
});
const EVENTS = Number(args.events);
const CONNECTIONS = Number(args.connections);
const WINDOW = Number(args.window);
const WARMUP = Number(args.warmup);
const TOPICS = 20;
const FILLER = 'the quick brown fox jumps over the lazy dog; '.repeat(3);

/** Event i belongs to connection i % CONNECTIONS and is signed by that connection's key. */
function templates(count: number, label: string): SignJob[] {
  const now = Math.floor(Date.now() / 1000);
  return Array.from({ length: count }, (_, i) => {
    const template: EventTemplate = {
      kind: 1,
      created_at: now,
      tags: [['t', 'bench'], ['t', `topic${i % TOPICS}`], ['client', 'buzz-bench']],
      content: `${label} message ${i}: ${FILLER}`,
    };
    return { key: i % CONNECTIONS, template };
  });
}

async function publishPhase(conns: readonly BenchConnection[], events: readonly NostrEvent[]): Promise<{ result: PublishResult; seconds: number }> {
  const perConnection = dealRoundRobin(events, conns.length).map(toPublishItems);
  const start = process.hrtime.bigint();
  const results = await Promise.all(conns.map((c, i) => c.publishWindowed(perConnection[i], WINDOW)));
  return { result: mergePublishResults(results), seconds: secondsSince(start) };
}

async function storedCount(url: string, events: readonly NostrEvent[]): Promise<number> {
  const pool = quietPool(url, 1);
  try {
    const ids = events.map((e) => Buffer.from(e.id, 'hex'));
    const { rows } = await pool.query<{ n: number }>('select count(*)::int as n from events where id = any($1::bytea[])', [ids]);
    return rows[0].n;
  } finally {
    await pool.end();
  }
}

const INSERT_ROW = `
  insert into events (community_id, id, pubkey, created_at, kind, tags, content, sig)
  values ($1, decode($2, 'hex'), decode($3, 'hex'), to_timestamp($4), $5, $6::jsonb, $7, decode($8, 'hex'))
  on conflict do nothing`;

/** The same rows, one autocommit INSERT each, one client per relay connection, in a twin database. */
interface BaselinePhase {
  run: SqlRunResult;
  stored: number;
  cpu: CpuSample;
}

async function baselinePhase(env: BenchEnv, warmup: readonly NostrEvent[], events: readonly NostrEvent[]): Promise<BaselinePhase> {
  const url = await env.createMigratedDatabase('buzz_bench_baseline');
  const pool = quietPool(url, 1);
  const { rows } = await pool.query<{ id: string }>(`insert into communities (host, name) values ('baseline.bench', 'baseline') returning id`);
  await pool.end();
  const communityId = rows[0].id;
  const insert = (client: Client, e: NostrEvent) =>
    client.query(INSERT_ROW, [communityId, e.id, e.pubkey, e.created_at, e.kind, JSON.stringify(e.tags), e.content, e.sig]);
  await runSqlClients(url, dealRoundRobin(warmup, CONNECTIONS), insert);
  const before = sampleCpu(env.relayPid, env.cluster.baseDir);
  const run = await runSqlClients(url, dealRoundRobin(events, CONNECTIONS), insert);
  const cpu = cpuSince(before, sampleCpu(env.relayPid, env.cluster.baseDir));
  return { run, stored: await storedCount(url, events), cpu };
}

interface RelayPhase {
  result: PublishResult;
  seconds: number;
  stored: number;
  /** CPU seconds used during the timed publishing. */
  cpu: CpuSample;
}

async function relayPhase(env: BenchEnv, keys: readonly Uint8Array[], warmup: readonly NostrEvent[], events: readonly NostrEvent[]): Promise<RelayPhase> {
  const conns = await Promise.all(keys.map((sk) => BenchConnection.open(env.relayUrl, sk)));
  try {
    logLine(`${conns.length} connections authenticated as ${keys.map((k) => getPublicKey(k).slice(0, 8)).join(', ')}`);
    await publishPhase(conns, warmup);
    const before = sampleCpu(env.relayPid, env.cluster.baseDir);
    const { result, seconds } = await publishPhase(conns, events);
    const cpu = cpuSince(before, sampleCpu(env.relayPid, env.cluster.baseDir));
    return { result, seconds, stored: await storedCount(env.writerUrl, events), cpu };
  } finally {
    conns.forEach((c) => c.close());
  }
}

/** Milliseconds of CPU per item. */
function perItem(cpuSeconds: number, items: number): number {
  return round((cpuSeconds * 1000) / items, 3);
}

function resultLine(relay: RelayPhase, baseline: BaselinePhase) {
  const { result, seconds } = relay;
  const eventsPerS = result.accepted / seconds;
  const baselinePerS = baseline.stored / baseline.run.seconds;
  const ok = summarize(result.latenciesMs);
  const base = summarize(baseline.run.latenciesMs);
  return {
    bench: 'ingest',
    events: EVENTS,
    connections: CONNECTIONS,
    window: WINDOW,
    accepted: result.accepted,
    duplicates: result.duplicates,
    rejected: result.rejected,
    stored_rows: relay.stored,
    stored_matches_accepted: relay.stored === result.accepted,
    seconds: round(seconds, 3),
    events_per_s: round(eventsPerS, 1),
    ok_p50_ms: ok.p50,
    ok_p90_ms: ok.p90,
    ok_p99_ms: ok.p99,
    ok_max_ms: ok.max,
    relay_cpu_ms_per_event: perItem(relay.cpu.relay, result.accepted),
    pg_cpu_ms_per_event: perItem(relay.cpu.postgres, result.accepted),
    client_cpu_ms_per_event: perItem(relay.cpu.client, result.accepted),
    baseline_rows: baseline.stored,
    baseline_seconds: round(baseline.run.seconds, 3),
    baseline_rows_per_s: round(baselinePerS, 1),
    baseline_p50_ms: base.p50,
    baseline_p90_ms: base.p90,
    baseline_p99_ms: base.p99,
    baseline_pg_cpu_ms_per_row: perItem(baseline.cpu.postgres, baseline.stored),
    baseline_client_cpu_ms_per_row: perItem(baseline.cpu.client, baseline.stored),
    ratio: round(eventsPerS / baselinePerS, 3),
  };
}

async function main(): Promise<number> {
  const env = await startBenchEnv(); // first: a relay that cannot start fails the run at once
  try {
    const keys = Array.from({ length: CONNECTIONS }, () => generateSecretKey());
    const signStart = process.hrtime.bigint();
    const warmup = await signInParallel(keys, templates(WARMUP, 'warmup'));
    const events = await signInParallel(keys, templates(EVENTS, 'ingest'));
    logLine(`signed ${WARMUP + EVENTS} events in ${round(secondsSince(signStart), 1)} s (nostr-tools finalizeEvent)`);
    const relay = await relayPhase(env, keys, warmup, events);
    logLine(`relay: ${relay.result.accepted}/${EVENTS} accepted in ${round(relay.seconds)} s; stored rows ${relay.stored}`);
    if (relay.result.rejected > 0) logLine(`relay rejections: ${JSON.stringify(Object.fromEntries(relay.result.reasons))}`);
    const baseline = await baselinePhase(env, warmup, events);
    console.log(JSON.stringify(resultLine(relay, baseline)));
    const dir = chartsDir(args.charts, 'ingest');
    if (dir !== undefined) {
      const samples = [
        ...relay.result.latenciesMs.map((ms) => ({ series: 'relay: EVENT to OK', ms })),
        ...baseline.run.latenciesMs.map((ms) => ({ series: 'baseline: one INSERT', ms })),
      ];
      logLine(`charts: ${(await writeCharts(dir, [{ name: 'ingest-latency', spec: latencyCdf(`ingest latency (${EVENTS} events, ${CONNECTIONS} connections, window ${WINDOW})`, samples) }])).join(', ')}`);
    }
    if (relay.stored !== relay.result.accepted) logLine(`FAIL: ${relay.stored} stored rows but ${relay.result.accepted} accepted OKs`);
    return relay.stored === relay.result.accepted && baseline.stored === EVENTS ? 0 : 1;
  } catch (err) {
    logLine(`relay output:\n${env.relayOutput()}`);
    throw err;
  } finally {
    await env.stop();
  }
}

runBench(main);
