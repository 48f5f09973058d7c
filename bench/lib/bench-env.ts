/**
 * What every bench needs: an ephemeral Postgres writer + streaming replica (PgCluster, tmpfs when
 * it can, fsync off like the test harness), a database for the relay, the built relay running
 * against it as a child process (exactly as an operator runs it), and a stop() that undoes all of
 * it. Plus the small statistics the benches print.
 *
 * BUZZ_* variables of the bench's own environment are passed to the relay, so a run can be tuned
 * without code changes, e.g. `BUZZ_DB_POOL_SIZE=40 node dist/bench/ingest.bench.js`.
 */
import { ChildProcess, spawn } from 'node:child_process';
import { createWriteStream, existsSync } from 'node:fs';
import path from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { Kysely, PostgresDialect } from 'kysely';
import { Pool } from 'pg';
import { PgCluster } from '../../src/database/embedded/pg-cluster.js';
import { migrateToLatest } from '@buzz-relay/read-path';

/** dist/bench/lib -> dist/src/main.js (the bench runs from the compiled tree). */
export const RELAY_ENTRY = path.resolve(import.meta.dirname, '../../src/main.js');
/**
 * dist/bench/lib/spill-relay.js: the relay with seed 000 off (history reads spill onto the writer),
 * the baseline of the storm and history-shed benches' `spill` variants. Bench-only: no relay
 * configuration can do this.
 */
export const SPILL_RELAY_ENTRY = path.resolve(import.meta.dirname, 'spill-relay.js');
/** Generous: on a saturated shared machine the relay took more than 30 s to listen. */
const RELAY_START_TIMEOUT_MS = 120_000;
const RELAY_STOP_TIMEOUT_MS = 10_000;
const RELAY_DATABASE = 'buzz_bench';

/**
 * The per-pubkey "human" quotas (10 frames/s, 60 messages/min by default) would refuse a bench
 * client after its first seconds: the benches measure the pipeline, so they lift them to the
 * maximum the config accepts. The limiter still runs for every frame, so its cost is measured.
 */
const UNLIMITED_QUOTAS = {
  BUZZ_RATE_LIMIT_HUMAN_WS_EVENTS_PER_SEC: '1000000',
  BUZZ_RATE_LIMIT_HUMAN_MESSAGES_PER_MIN: '1000000',
  BUZZ_RATE_LIMIT_HUMAN_API_CALLS_PER_MIN: '1000000',
};

/**
 * Every bench client connects from this machine's one address, so the per-address connection
 * limit (1,000 by default) and the reserve under the cap (places for addresses holding few
 * sockets), both attack guards, would refuse a storm of simulated users: the benches lift them.
 * The per-key limits and shares stay as shipped: each bench client has its own key.
 */
const ONE_ADDRESS_MANY_USERS = { BUZZ_MAX_CONNECTIONS_PER_IP: '1000000', BUZZ_CONNECTION_RESERVE: '0' };

/**
 * The bridge benches (history-shed, long-thread) name their reader with the X-Pubkey development
 * header instead of signing NIP-98 per call; a relay with DATABASE_URL refuses it unless told.
 */
const DEV_HEADER = { BUZZ_REQUIRE_AUTH_TOKEN: 'false' };

/** ws:// URL of each spawned relay → its operator /metrics URL (read by lib/pod-metrics.ts). */
const metricsUrls = new Map<string, string>();

/** The /metrics address of a relay this process spawned (its public port does not serve /metrics). */
export function metricsUrlOf(relayUrl: string): string | undefined {
  return metricsUrls.get(relayUrl);
}

export interface BenchEnv {
  readonly cluster: PgCluster;
  /** The relay's database on the writer and on the replica. */
  readonly writerUrl: string;
  readonly readerUrl: string;
  /** ws://localhost:PORT: the URL clients connect to and name in their NIP-42 `relay` tag. */
  readonly relayUrl: string;
  readonly relayPid: number;
  relayOutput(): string;
  /** A second database with the relay's schema (migrated here), for same-run SQL baselines. */
  createMigratedDatabase(name: string): Promise<string>;
  stop(): Promise<void>;
}

/** `entry`: the relay's entry point (RELAY_ENTRY, or SPILL_RELAY_ENTRY for a spill baseline). */
export async function startBenchEnv(log: (msg: string) => void = logLine, entry = RELAY_ENTRY): Promise<BenchEnv> {
  if (!existsSync(entry)) throw new Error(`${entry} is missing: run \`npm run build\` first`);
  const started = Date.now();
  const cluster = await PgCluster.start({ persistent: false, withReplica: true });
  let relay: RelayChild | undefined;
  try {
    const { writerUrl, readerUrl } = await cluster.createDatabase(RELAY_DATABASE);
    await cluster.waitForDatabaseOnReplica(RELAY_DATABASE);
    relay = await spawnRelay({ DATABASE_URL: writerUrl, READ_DATABASE_URL: readerUrl ?? '' }, entry);
    log(`postgres pair + relay ${relay.url} (pid ${relay.child.pid}) ready in ${Date.now() - started} ms`);
    const ready = relay;
    return envOf(cluster, writerUrl, readerUrl ?? writerUrl, ready, async () => {
      await ready.stop();
      await cluster.stop();
    }, (name) => createMigratedDatabase(cluster, name));
  } catch (err) {
    await relay?.stop();
    await cluster.stop();
    throw err;
  }
}

/** A BenchEnv over a started cluster and server; `stop` runs once, on Ctrl-C too. */
export function envOf(
  cluster: PgCluster,
  writerUrl: string,
  readerUrl: string,
  server: RelayChild,
  stopAll: () => Promise<void>,
  createMigrated: BenchEnv['createMigratedDatabase'],
): BenchEnv {
  const stop = once(stopAll);
  stopOnSignals(stop);
  return {
    cluster,
    writerUrl,
    readerUrl,
    relayUrl: server.url,
    relayPid: server.child.pid ?? 0,
    relayOutput: () => server.output(),
    createMigratedDatabase: createMigrated,
    stop,
  };
}

async function createMigratedDatabase(cluster: PgCluster, name: string): Promise<string> {
  const { writerUrl } = await cluster.createDatabase(name);
  const db = new Kysely<unknown>({ dialect: new PostgresDialect({ pool: quietPool(writerUrl, 2) }) });
  try {
    await migrateToLatest(db);
  } finally {
    await db.destroy();
  }
  return writerUrl;
}

let fullGc: (() => void) | undefined;

/**
 * A full collection of the bench process's own heap, right before a timed run, so that the load
 * generator's collector has as little as possible to do inside the window: it shares the
 * machine's two cores with the relay and Postgres, and after signing and seeding (or a SQL
 * baseline) its heap holds a lot of garbage.
 */
export function collectGarbage(): void {
  if (fullGc === undefined) {
    setFlagsFromString('--expose-gc');
    fullGc = runInNewContext('gc') as () => void;
  }
  fullGc();
}

/** A pg Pool with the mandatory 'error' listener (a server restart must not crash the bench). */
export function quietPool(url: string, max: number): Pool {
  const pool = new Pool({ connectionString: url, max, connectionTimeoutMillis: 10_000 });
  pool.on('error', (err) => logLine(`idle pg connection error: ${err.message}`));
  return pool;
}

export interface RelayChild {
  readonly url: string;
  readonly child: ChildProcess;
  output(): string;
  stop(): Promise<void>;
}

function relayEnv(databaseEnv: Record<string, string>): NodeJS.ProcessEnv {
  const passThrough = Object.fromEntries(Object.entries(process.env).filter(([key]) => key.startsWith('BUZZ_') || key.startsWith('MALLOC_') || key === 'LD_PRELOAD'));
  return {
    PATH: process.env.PATH ?? '',
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
    BUZZ_DEFAULT_COMMUNITY_HOSTS: 'localhost,127.0.0.1',
    ...UNLIMITED_QUOTAS,
    ...ONE_ADDRESS_MANY_USERS,
    ...DEV_HEADER,
    ...passThrough,
    ...databaseEnv,
    PORT: '0',
    BUZZ_BIND_ADDR: '127.0.0.1:0',
    BUZZ_METRICS_PORT: '0',
  };
}

/** `extraNodeArgs`: node flags of this run (the abuse bench's heap limit), after the shipped ones. */
export async function spawnRelay(databaseEnv: Record<string, string>, entry = RELAY_ENTRY, extraNodeArgs: readonly string[] = []): Promise<RelayChild> {
  // BENCH_RELAY_NODE_ARGS passes extra node flags to the relay, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`.
  // The relay runs with the flags it ships with (package.json `start`, the Dockerfile); later flags win.
  const nodeArgs = ['--max-semi-space-size=16', ...extraNodeArgs, ...(process.env.BENCH_RELAY_NODE_ARGS ?? '').split(' ').filter(Boolean)];
  const relay = await spawnChild(process.execPath, ['--enable-source-maps', ...nodeArgs, entry], { env: relayEnv(databaseEnv) }, async (child, output) => {
    const port = await listeningPort(child, output);
    return `ws://localhost:${port}`;
  });
  const metricsUrl = /buzz-relay metrics on (http:\/\/[^\s"]+)/.exec(relay.output())?.[1];
  if (metricsUrl) metricsUrls.set(relay.url, metricsUrl);
  return relay;
}

/**
 * A server child process whose output is collected (and copied to BENCH_RELAY_OUTPUT=<file> when
 * set: `--trace-gc` lines, logs), killed if the bench exits, stopped with SIGTERM (SIGKILL after
 * 10 s). `ready` resolves with its ws:// URL once it serves.
 */
export async function spawnChild(
  command: string,
  args: readonly string[],
  options: { env: NodeJS.ProcessEnv; cwd?: string },
  ready: (child: ChildProcess, output: () => string) => Promise<string>,
): Promise<RelayChild> {
  const child = spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const copy = process.env.BENCH_RELAY_OUTPUT ? createWriteStream(process.env.BENCH_RELAY_OUTPUT) : undefined;
  const collect = (d: Buffer) => {
    out += d.toString();
    copy?.write(d);
  };
  child.stdout!.on('data', collect);
  child.stderr!.on('data', collect);
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  const stop = once(() => stopChild(child).finally(() => process.off('exit', killOnExit)));
  try {
    const url = await ready(child, () => out);
    return { url, child, output: () => out, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** Waits for the relay's `listening on ws://…:PORT` line. */
function listeningPort(child: ChildProcess, output: () => string): Promise<number> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`relay did not start in ${RELAY_START_TIMEOUT_MS} ms:\n${output()}`)), RELAY_START_TIMEOUT_MS);
    const onData = () => {
      const m = /listening on ws:\/\/[^:\s]+:(\d+)/.exec(output());
      if (!m) return;
      clearTimeout(timer);
      child.stdout!.off('data', onData);
      resolve(Number(m[1]));
    };
    child.stdout!.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`relay exited with ${code} before listening:\n${output()}`));
    });
  });
}

function stopChild(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    const kill = setTimeout(() => child.kill('SIGKILL'), RELAY_STOP_TIMEOUT_MS);
    child.once('exit', () => {
      clearTimeout(kill);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

function stopOnSignals(stop: () => Promise<void>): void {
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      logLine(`${signal}: stopping the relay and the postgres pair`);
      void stop().finally(() => process.exit(130));
    });
  }
}

function once(fn: () => Promise<void>): () => Promise<void> {
  let running: Promise<void> | undefined;
  return () => (running ??= fn());
}

/** Progress goes to stderr; stdout carries only the JSON result lines. */
/** Runs a bench's `main` and exits with the status it returns (void = 0), or 1 with the error on stderr. */
export function runBench(main: () => Promise<number | void>): void {
  main().then(
    (code) => process.exit(code ?? 0),
    (err: unknown) => {
      logLine(`failed: ${(err as Error)?.stack ?? String(err)}`);
      process.exit(1);
    },
  );
}

export function logLine(msg: string): void {
  process.stderr.write(`[bench] ${msg}\n`);
}

// ---------------------------------------------------------------------------------------------
// Statistics

/** Nearest-rank percentile (p in 0..100) of an ascending array; NaN when empty. */
export function percentile(sortedAsc: readonly number[], p: number): number {
  if (sortedAsc.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sortedAsc.length);
  return sortedAsc[Math.min(sortedAsc.length, Math.max(1, rank)) - 1];
}

export interface LatencySummary {
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

export function summarize(samplesMs: readonly number[]): LatencySummary {
  const sorted = Float64Array.from(samplesMs).sort();
  const arr = Array.from(sorted);
  return { p50: round(percentile(arr, 50)), p90: round(percentile(arr, 90)), p99: round(percentile(arr, 99)), max: round(arr[arr.length - 1] ?? Number.NaN) };
}

export function round(value: number, digits = 2): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

/** Seconds elapsed since `start` (a process.hrtime.bigint() reading). */
export function secondsSince(start: bigint): number {
  return Number(process.hrtime.bigint() - start) / 1e9;
}
