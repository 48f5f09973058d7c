/**
 * Seed 000: does a burst of history reads leave the writer-only reads alone? A small reader pool
 * (BUZZ_DB_READ_POOL_SIZE, default here 2 → history cap 1) serves a burst of heavy history reads
 * (WS REQ and bridge `/query`, `limit` 500 over a seeded `events` table) while a steady stream of
 * writer-only reads runs: `/readyz` (a writer `SELECT 1` through the relay's writer pool) and
 * NIP-42 AUTH handshakes (tenant resolution and authentication, writer-only by contract), plus
 * a tenant-resolution-shaped query sent straight to the writer from the bench (the writer's own
 * responsiveness, without the relay's event loop in the number).
 *
 * One run measures the writer-only p50/p99 three ways, each against its own idle baseline:
 * idle, under the burst with shedding (the relay as shipped), and under the burst with the old
 * spill behaviour (bench/lib/spill-relay.ts, a benchmark-only relay entry: no gate, and history
 * reads that miss the reader's acquire budget move to the writer). Burst clients back off 100 ms
 * after a retryable CLOSED / 503, as real clients do. Each variant gets a fresh Postgres pair.
 *
 *   npm run build && node dist/bench/history-shed.bench.js [--seed 20000] [--burst 24] [--http 8] [--seconds 8]
 *
 * Goal (issue 5): with shedding, writer-only p99 stays within 1.5× of idle.
 */
import { parseArgs } from 'node:util';
import { generateSecretKey } from 'nostr-tools/pure';
import { BenchConnection } from './lib/bench-connection.js';
import { logLine, quietPool, RELAY_ENTRY, round, SPILL_RELAY_ENTRY, startBenchEnv, summarize, type BenchEnv, type LatencySummary } from './lib/bench-env.js';

const { values: args } = parseArgs({
  options: {
    seed: { type: 'string', default: '20000' },
    burst: { type: 'string', default: '24' },
    http: { type: 'string', default: '8' },
    seconds: { type: 'string', default: '8' },
  },
});
const SEED = Number(args.seed);
const BURST_WS = Number(args.burst);
const BURST_HTTP = Number(args.http);
const SECONDS = Number(args.seconds);
const HISTORY_LIMIT = 500;
const BACKOFF_MS = 100;
const PROBE_GAP_MS = 20;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const httpBase = (env: BenchEnv) => env.relayUrl.replace(/^ws/, 'http');

/** Rows written straight to the writer (reads do not re-verify signatures), then replicated. */
async function seed(env: BenchEnv): Promise<void> {
  const pool = quietPool(env.writerUrl, 1);
  try {
    await pool.query(
      `insert into events (community_id, id, pubkey, created_at, kind, tags, content, sig)
       select c.id, sha256(('shed' || g)::bytea), sha256(('author' || (g % 50))::bytea), now() - (g || ' seconds')::interval, 1,
              '[["t","bench"]]', repeat('history burst payload ', 10), sha512(('sig' || g)::bytea)
         from generate_series(1, $1::int) g,
              (select coalesce((select id from communities where host = 'localhost'),
                               (select community_id from community_host_aliases where host = 'localhost')) as id) c`,
      [SEED],
    );
  } finally {
    await pool.end();
  }
  await env.cluster.waitForReplica(60_000);
}

interface Probes {
  readyz: number[];
  auth: number[];
  /** The writer itself, measured from outside the relay (no relay CPU in the number). */
  writerSql: number[];
}

/** The writer-only stream: one `/readyz` and one AUTH handshake at a time, back to back. */
async function probe(env: BenchEnv, seconds: number): Promise<Probes> {
  const out: Probes = { readyz: [], auth: [], writerSql: [] };
  const until = Date.now() + seconds * 1000;
  const readyz = async () => {
    while (Date.now() < until) {
      const t = process.hrtime.bigint();
      const res = await fetch(`${httpBase(env)}/readyz`);
      await res.arrayBuffer();
      if (res.status !== 200) throw new Error(`/readyz answered ${res.status}`);
      out.readyz.push(Number(process.hrtime.bigint() - t) / 1e6);
      await sleep(PROBE_GAP_MS);
    }
  };
  const auth = async () => {
    while (Date.now() < until) {
      const t = process.hrtime.bigint();
      const conn = await BenchConnection.open(env.relayUrl, generateSecretKey());
      out.auth.push(Number(process.hrtime.bigint() - t) / 1e6);
      conn.close();
      await sleep(PROBE_GAP_MS);
    }
  };
  const writerSql = async () => {
    const pool = quietPool(env.writerUrl, 1);
    try {
      while (Date.now() < until) {
        const t = process.hrtime.bigint();
        // Tenant resolution's shape: the community of a host.
        await pool.query(`select id from communities where host = $1`, ['localhost']);
        out.writerSql.push(Number(process.hrtime.bigint() - t) / 1e6);
        await sleep(PROBE_GAP_MS);
      }
    } finally {
      await pool.end();
    }
  };
  await Promise.all([readyz(), auth(), writerSql()]);
  return out;
}

interface Burst {
  served: number;
  shed: number;
  stop(): Promise<void>;
}

/** History readers in closed loops until stopped; a retryable refusal backs off BACKOFF_MS. */
async function startBurst(env: BenchEnv): Promise<Burst> {
  const conns = await Promise.all(Array.from({ length: BURST_WS }, () => BenchConnection.open(env.relayUrl, generateSecretKey())));
  const burst = { served: 0, shed: 0, running: true };
  const ws = conns.map(async (conn) => {
    while (burst.running) {
      const res = await conn.req('h', { kinds: [1], limit: HISTORY_LIMIT });
      if (res.end === 'EOSE') burst.served += 1;
      else if (res.reason === 'error: database error') (burst.shed += 1), await sleep(BACKOFF_MS);
      else throw new Error(`history REQ ended with CLOSED ${res.reason}`);
    }
  });
  const http = Array.from({ length: BURST_HTTP }, async (_, i) => {
    const headers = { 'x-pubkey': (i + 1).toString(16).padStart(64, '0'), 'content-type': 'application/json' };
    while (burst.running) {
      const res = await fetch(`${httpBase(env)}/query`, { method: 'POST', headers, body: JSON.stringify([{ kinds: [1], limit: HISTORY_LIMIT }]) });
      await res.arrayBuffer();
      if (res.status === 200) burst.served += 1;
      else if (res.status === 503) (burst.shed += 1), await sleep(BACKOFF_MS);
      else throw new Error(`/query answered ${res.status}`);
    }
  });
  const all = Promise.all([...ws, ...http]);
  all.catch(() => undefined);
  return {
    get served() {
      return burst.served;
    },
    get shed() {
      return burst.shed;
    },
    stop: async () => {
      burst.running = false;
      await all;
      for (const c of conns) c.close();
    },
  };
}

type Summaries = Record<keyof Probes, LatencySummary>;

interface Variant {
  idle: Summaries;
  burst: Summaries;
  served: number;
  shed: number;
}

async function runVariant(spill: boolean): Promise<Variant> {
  process.env.BUZZ_DB_READ_POOL_SIZE ??= '2';
  process.env.BUZZ_REPLICA_READ_MAX_AGE_MS ??= '2000';
  const env = await startBenchEnv(logLine, spill ? SPILL_RELAY_ENTRY : RELAY_ENTRY);
  try {
    await seed(env);
    logLine(`${spill ? 'spill' : 'shed'}: seeded ${SEED} events; warming up`);
    await probe(env, 1);
    const idle = await probe(env, SECONDS);
    const burst = await startBurst(env);
    await sleep(1000);
    const served0 = burst.served;
    const shed0 = burst.shed;
    const loaded = await probe(env, SECONDS);
    const served = burst.served - served0;
    const shed = burst.shed - shed0;
    await burst.stop();
    logLine(`${spill ? 'spill' : 'shed'}: ${served} history reads served, ${shed} shed during the measured burst`);
    return { idle: summaries(idle), burst: summaries(loaded), served, shed };
  } catch (err) {
    logLine(env.relayOutput().slice(-4000));
    throw err;
  } finally {
    await env.stop();
  }
}

function summaries(p: Probes): Summaries {
  return { readyz: summarize(p.readyz), auth: summarize(p.auth), writerSql: summarize(p.writerSql) };
}

function line(variant: string, v: Variant) {
  return {
    bench: 'history-shed',
    variant,
    read_pool: Number(process.env.BUZZ_DB_READ_POOL_SIZE),
    burst_clients: BURST_WS + BURST_HTTP,
    history_served: v.served,
    history_shed: v.shed,
    readyz_idle_p50_ms: v.idle.readyz.p50,
    readyz_idle_p99_ms: v.idle.readyz.p99,
    readyz_burst_p50_ms: v.burst.readyz.p50,
    readyz_burst_p99_ms: v.burst.readyz.p99,
    readyz_p99_ratio: round(v.burst.readyz.p99 / v.idle.readyz.p99),
    auth_idle_p50_ms: v.idle.auth.p50,
    auth_idle_p99_ms: v.idle.auth.p99,
    auth_burst_p50_ms: v.burst.auth.p50,
    auth_burst_p99_ms: v.burst.auth.p99,
    auth_p99_ratio: round(v.burst.auth.p99 / v.idle.auth.p99),
    writer_sql_idle_p50_ms: v.idle.writerSql.p50,
    writer_sql_idle_p99_ms: v.idle.writerSql.p99,
    writer_sql_burst_p50_ms: v.burst.writerSql.p50,
    writer_sql_burst_p99_ms: v.burst.writerSql.p99,
    writer_sql_p99_ratio: round(v.burst.writerSql.p99 / v.idle.writerSql.p99),
  };
}

async function main(): Promise<void> {
  const shed = await runVariant(false);
  console.log(JSON.stringify(line('shed', shed)));
  const spill = await runVariant(true);
  console.log(JSON.stringify(line('spill (bench/lib/spill-relay.ts)', spill)));
  console.log(
    JSON.stringify({
      bench: 'history-shed',
      variant: 'summary',
      readyz_p99_shed_over_idle: round(shed.burst.readyz.p99 / shed.idle.readyz.p99),
      readyz_p99_spill_over_idle: round(spill.burst.readyz.p99 / spill.idle.readyz.p99),
      auth_p99_shed_over_idle: round(shed.burst.auth.p99 / shed.idle.auth.p99),
      auth_p99_spill_over_idle: round(spill.burst.auth.p99 / spill.idle.auth.p99),
      writer_sql_p99_shed_over_idle: round(shed.burst.writerSql.p99 / shed.idle.writerSql.p99),
      writer_sql_p99_spill_over_idle: round(spill.burst.writerSql.p99 / spill.idle.writerSql.p99),
      goal: 'shed writer-only p99 ≤ 1.5× idle',
    }),
  );
}

main().catch((err: unknown) => {
  logLine(`failed: ${(err as Error).stack ?? String(err)}`);
  process.exit(1);
});
