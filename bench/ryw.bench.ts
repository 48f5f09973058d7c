/**
 * Read-your-writes misses across pods (issue 7 item 4). Two relay pods on one Redis and one
 * Postgres writer + streaming replica, with BUZZ_REPLICA_READ_MAX_AGE_MS set (default here
 * 5000 ms unless given) so that history reads may be served by the replica. Each client publishes
 * a channel message and, as soon as its `OK true` arrives, REQs that event by id:
 *
 * - `same_pod`: through the connection it published on (the baseline: that pod remembers the
 *   author's acknowledged write and only accepts replica proofs that cover it);
 * - `other_pod`: through its second connection, to the other pod. That pod learns of the write
 *   only when the event reaches it over Redis (live fan-out feeds its recent-writes table), so
 *   a read that overtakes the Redis message may be served by a replica that lacks the write;
 * - `other_pod_redis_down`: the same with redis-server killed (pods in BUZZ_REDIS_FAIL_MODE=local),
 *   so the other pod never hears of the write before the read.
 *
 * A miss is an EOSE without the event. Prints one JSON line per case (miss count and rate, REQ
 * latency p50/p90/p99, publish+read round trips per second) and a ratio line against same_pod.
 *
 *   npm run bench:ryw -- [--clients 8] [--rounds 150]
 */
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { startRedisServer } from '../test/harness/redis-server.js';
import { BenchConnection, type PublishItem } from './lib/bench-connection.js';
import { logLine, round, secondsSince, spawnRelay, startBenchEnv, summarize, type BenchEnv, type RelayChild } from './lib/bench-env.js';
import { fastSigner, type FastSigner } from './lib/fast-sign.js';
import { metricSamples } from './lib/pod-metrics.js';

const { values: args } = parseArgs({
  options: {
    clients: { type: 'string', default: '8' },
    rounds: { type: 'string', default: '150' },
  },
});
const CLIENTS = Number(args.clients);
const ROUNDS = Number(args.rounds);
const CASES = ['same_pod', 'other_pod', 'other_pod_redis_down'] as const;
type Case = (typeof CASES)[number];

interface CaseResult {
  reads: number;
  misses: number;
  errors: Record<string, number>;
  readMs: number[];
  seconds: number;
  /** buzz_db_route_decision (path/decision/reason) and buzz_db_reader_spill_total (path/spill/reason) increments on both pods during the case. */
  routes: Record<string, number>;
}

const item = (ev: { id: string }): PublishItem => ({ id: ev.id, frame: JSON.stringify(['EVENT', ev]) });

async function client(signer: FastSigner, publishOn: BenchConnection, readOn: BenchConnection, channel: string, result: CaseResult): Promise<void> {
  for (let i = 0; i < ROUNDS; i++) {
    const ev = signer.sign(9, [['h', channel]], `ryw ${i}`);
    const published = await publishOn.publishWindowed([item(ev)], 1);
    if (published.accepted !== 1) {
      const reason = [...published.reasons.keys()][0] ?? 'duplicate';
      result.errors[`publish: ${reason}`] = (result.errors[`publish: ${reason}`] ?? 0) + 1;
      continue;
    }
    const read = await readOn.req(`r${i}`, { ids: [ev.id], kinds: [9], '#h': [channel] });
    readOn.closeSubscription(`r${i}`);
    if (read.end === 'CLOSED') {
      result.errors[`req: ${read.reason}`] = (result.errors[`req: ${read.reason}`] ?? 0) + 1;
      continue;
    }
    result.reads += 1;
    result.readMs.push(read.ms);
    if (!read.ids.includes(ev.id)) result.misses += 1;
  }
}

async function runCase(which: Case, urls: readonly [string, string], channel: string): Promise<CaseResult> {
  const result: CaseResult = { reads: 0, misses: 0, errors: {}, readMs: [], seconds: 0, routes: {} };
  const routesBefore = await routeDecisions(urls);
  const setups = await Promise.all(
    Array.from({ length: CLIENTS }, async (_, i) => {
      const signer = fastSigner();
      const home = urls[i % 2];
      const away = urls[(i + 1) % 2];
      const publishOn = await BenchConnection.open(home, signer.sk);
      const readOn = which === 'same_pod' ? publishOn : await BenchConnection.open(away, signer.sk);
      return { signer, publishOn, readOn };
    }),
  );
  const start = process.hrtime.bigint();
  await Promise.all(setups.map((s) => client(s.signer, s.publishOn, s.readOn, channel, result)));
  result.seconds = secondsSince(start);
  for (const [decision, n] of Object.entries(await routeDecisions(urls))) {
    const delta = n - (routesBefore[decision] ?? 0);
    if (delta > 0) result.routes[decision] = delta;
  }
  for (const s of setups) {
    s.publishOn.close();
    if (s.readOn !== s.publishOn) s.readOn.close();
  }
  return result;
}

async function routeDecisions(urls: readonly string[]): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const url of urls) {
    for (const family of ['buzz_db_route_decision', 'buzz_db_reader_spill_total']) {
      for (const [labels, v] of await metricSamples(url, family)) {
        const key = ['path', 'decision', 'reason'].map((l) => new RegExp(`${l}="([^"]*)"`).exec(labels)?.[1] ?? 'spill').join('/');
        out[key] = (out[key] ?? 0) + v;
      }
    }
  }
  return out;
}

function line(which: Case, r: CaseResult, maxAgeMs: string) {
  const s = summarize(r.readMs);
  return {
    bench: 'ryw',
    variant: which,
    replica_read_max_age_ms: Number(maxAgeMs),
    clients: CLIENTS,
    rounds: ROUNDS,
    reads: r.reads,
    misses: r.misses,
    miss_rate: round(r.reads > 0 ? r.misses / r.reads : Number.NaN, 4),
    errors: r.errors,
    route_decisions: r.routes,
    read_p50_ms: s.p50,
    read_p90_ms: s.p90,
    read_p99_ms: s.p99,
    read_max_ms: s.max,
    round_trips_per_s: round(r.reads / r.seconds, 1),
  };
}

async function main(): Promise<void> {
  const redis = await startRedisServer();
  process.env.BUZZ_REDIS_URL = redis.url;
  process.env.BUZZ_REPLICA_READ_MAX_AGE_MS ??= '5000';
  process.env.BUZZ_REDIS_FAIL_MODE ??= 'local';
  const maxAge = process.env.BUZZ_REPLICA_READ_MAX_AGE_MS;
  let env: BenchEnv | undefined;
  let podB: RelayChild | undefined;
  try {
    env = await startBenchEnv();
    podB = await spawnRelay({ DATABASE_URL: env.writerUrl, READ_DATABASE_URL: env.readerUrl });
    const urls = [env.relayUrl, podB.url] as const;
    const owner = fastSigner();
    const conn = await BenchConnection.open(urls[0], owner.sk);
    const channel = randomUUID();
    const created = await conn.publishWindowed([item(owner.sign(9007, [['h', channel], ['name', 'ryw']], ''))], 1);
    if (created.accepted !== 1) throw new Error(`channel creation refused: ${JSON.stringify(Object.fromEntries(created.reasons))}`);
    conn.close();
    // The replica needs the channel row (and a fresh heartbeat) before bounded reads can use it.
    await new Promise((r) => setTimeout(r, 1500));
    logLine(`ryw: ${CLIENTS} clients x ${ROUNDS} rounds per case, BUZZ_REPLICA_READ_MAX_AGE_MS=${maxAge}`);
    const results = new Map<Case, CaseResult>();
    for (const which of CASES) {
      if (which === 'other_pod_redis_down') {
        await redis.kill();
        await new Promise((r) => setTimeout(r, 1000));
      }
      results.set(which, await runCase(which, urls, channel));
      process.stdout.write(`${JSON.stringify(line(which, results.get(which)!, maxAge))}\n`);
    }
    const baseline = results.get('same_pod')!;
    const base = summarize(baseline.readMs);
    for (const which of CASES.slice(1)) {
      const r = results.get(which)!;
      const other = summarize(r.readMs);
      process.stdout.write(
        `${JSON.stringify({
          bench: 'ryw',
          variant: `ratio_${which}_vs_same_pod`,
          read_p50: round(other.p50 / base.p50, 2),
          read_p90: round(other.p90 / base.p90, 2),
          read_p99: round(other.p99 / base.p99, 2),
          round_trips_per_s: round(r.reads / r.seconds / (baseline.reads / baseline.seconds), 2),
        })}\n`,
      );
    }
  } finally {
    await podB?.stop();
    await env?.stop();
    await redis.stop();
  }
  process.exit(0);
}

main().catch((err: unknown) => {
  logLine(`ryw bench failed: ${(err as Error)?.stack ?? String(err)}`);
  process.exit(1);
});
