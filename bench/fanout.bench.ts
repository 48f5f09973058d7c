/**
 * Live fan-out latency: one publisher, N live subscribers (`kinds:[1]` + a per-run `#t`), on the
 * built relay with a real Postgres writer + streaming replica. Two variants in the same run:
 *
 * - `one_pod` (the baseline): all N subscribers and the publisher on one pod without Redis
 *   (in-process fan-out);
 * - `two_pods_redis`: the same N subscribers split evenly over pods A and B sharing one
 *   redis-server; the publisher is on pod A, so half the deliveries cross Redis. Its `local`
 *   (pod A) and `remote` (pod B) halves are also printed on their own.
 *
 * Latency is measured per delivery, from the moment the publisher hands the EVENT frame to its
 * socket to the moment a subscriber reads it (one process, one clock), so it includes ingest and
 * commit. Prints JSON lines with p50/p90/p99 and throughput, then a ratio line against the
 * baseline. Every subscriber must receive every event exactly once (exit 1 otherwise).
 *
 *   npm run bench:fanout -- [--subscribers 100] [--events 200] [--window 4] [--warmup 20]
 */
import { parseArgs } from 'node:util';
import { generateSecretKey, type Event as NostrEvent } from 'nostr-tools/pure';
import { startRedisServer } from '../test/harness/redis-server.js';
import { BenchConnection, toPublishItems } from './lib/bench-connection.js';
import { logLine, round, secondsSince, spawnRelay, startBenchEnv, summarize, type RelayChild } from './lib/bench-env.js';
import { signInParallel } from './lib/sign-pool.js';

const { values: args } = parseArgs({
  options: {
    subscribers: { type: 'string', default: '100' },
    events: { type: 'string', default: '200' },
    window: { type: 'string', default: '4' },
    warmup: { type: 'string', default: '20' },
  },
});
const SUBSCRIBERS = Number(args.subscribers);
const EVENTS = Number(args.events);
const WINDOW = Number(args.window);
const WARMUP = Number(args.warmup);
const DELIVERY_TIMEOUT_MS = 30_000;

interface Subscriber {
  readonly conn: BenchConnection;
  readonly pod: 'a' | 'b';
  /** Event id → arrivals seen (more than one is a duplicate). */
  readonly seen: Map<string, number>;
}

interface RunResult {
  seconds: number;
  /** Delivery latencies (ms) of the measured events, by the receiving subscriber's pod. */
  latenciesMs: { a: number[]; b: number[] };
  missing: number;
  duplicates: number;
}

async function openSubscribers(urls: readonly string[], tag: string): Promise<Subscriber[]> {
  const subs: Subscriber[] = [];
  for (let i = 0; i < SUBSCRIBERS; i++) {
    const conn = await BenchConnection.open(urls[i % urls.length], generateSecretKey());
    // No `since`: the run's tag is new, so history is empty, and events signed earlier still match.
    const { end, reason } = await conn.req('live', { kinds: [1], '#t': [tag] });
    if (end !== 'EOSE') throw new Error(`subscriber ${i}: ${end} ${reason ?? ''}`);
    subs.push({ conn, pod: i % urls.length === 0 ? 'a' : 'b', seen: new Map() });
  }
  return subs;
}

async function signEvents(tag: string, count: number): Promise<{ sk: Uint8Array; events: NostrEvent[] }> {
  const sk = generateSecretKey();
  const now = Math.floor(Date.now() / 1000);
  const jobs = Array.from({ length: count }, (_, i) => ({ key: 0, template: { kind: 1, created_at: now, tags: [['t', tag]], content: `fan-out ${tag} ${i}` } }));
  return { sk, events: await signInParallel([sk], jobs) };
}

/** Publishes warm-up then measured events on `publisherUrl`; subscribers spread over `urls` (pod A first). */
async function run(variant: string, publisherUrl: string, urls: readonly string[]): Promise<RunResult> {
  const tag = `${variant}-${Date.now()}`;
  const { sk, events } = await signEvents(tag, WARMUP + EVENTS);
  const subs = await openSubscribers(urls, tag);
  const publisher = await BenchConnection.open(publisherUrl, sk);
  const sentAt = new Map<string, bigint>();
  const measured = new Set(events.slice(WARMUP).map((e) => e.id));
  const result: RunResult = { seconds: 0, latenciesMs: { a: [], b: [] }, missing: 0, duplicates: 0 };
  let delivered = 0;
  for (const sub of subs) {
    sub.conn.onLiveEvent = (_subId, ev) => {
      const at = process.hrtime.bigint();
      const copies = (sub.seen.get(ev.id) ?? 0) + 1;
      sub.seen.set(ev.id, copies);
      if (copies > 1 || !measured.has(ev.id)) return;
      result.latenciesMs[sub.pod].push(Number(at - sentAt.get(ev.id)!) / 1e6);
      delivered += 1;
    };
  }
  publisher.onPublish = (id) => sentAt.set(id, process.hrtime.bigint());
  await publisher.publishWindowed(toPublishItems(events.slice(0, WARMUP)), WINDOW);
  const start = process.hrtime.bigint();
  const published = await publisher.publishWindowed(toPublishItems(events.slice(WARMUP)), WINDOW);
  if (published.accepted !== EVENTS) throw new Error(`${variant}: ${published.accepted}/${EVENTS} accepted: ${JSON.stringify(Object.fromEntries(published.reasons))}`);
  const deadline = Date.now() + DELIVERY_TIMEOUT_MS;
  while (delivered < EVENTS * SUBSCRIBERS && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
  result.seconds = secondsSince(start);
  // Late duplicates would arrive within a Redis round trip; give them a moment before counting.
  await new Promise((r) => setTimeout(r, 200));
  for (const sub of subs) {
    for (const id of measured) {
      const copies = sub.seen.get(id) ?? 0;
      if (copies === 0) result.missing += 1;
      if (copies > 1) result.duplicates += copies - 1;
    }
  }
  for (const sub of subs) sub.conn.close();
  publisher.close();
  return result;
}

function line(variant: string, r: RunResult, latencies: number[], pods: number, subscribers: number) {
  const s = summarize(latencies);
  return {
    bench: 'fanout',
    variant,
    pods,
    subscribers,
    events: EVENTS,
    window: WINDOW,
    deliveries: latencies.length,
    missing: r.missing,
    duplicates: r.duplicates,
    p50_ms: s.p50,
    p90_ms: s.p90,
    p99_ms: s.p99,
    max_ms: s.max,
    deliveries_per_s: round(latencies.length / r.seconds, 1),
    events_per_s: round(EVENTS / r.seconds, 1),
  };
}

async function main(): Promise<void> {
  delete process.env.BUZZ_REDIS_URL; // the baseline pod fans out in process
  const env = await startBenchEnv();
  const redis = await startRedisServer();
  const pods: RelayChild[] = [];
  let failed = false;
  try {
    logLine(`one pod, ${SUBSCRIBERS} subscribers, ${EVENTS} events (window ${WINDOW})`);
    const base = await run('one_pod', env.relayUrl, [env.relayUrl]);
    const baseLine = line('one_pod', base, base.latenciesMs.a, 1, SUBSCRIBERS);

    const podEnv = { DATABASE_URL: env.writerUrl, READ_DATABASE_URL: env.readerUrl, BUZZ_REDIS_URL: redis.url };
    pods.push(await spawnRelay(podEnv), await spawnRelay(podEnv));
    logLine(`two pods on redis ${redis.url}: ${pods.map((p) => p.url).join(', ')}`);
    const two = await run('two_pods_redis', pods[0].url, pods.map((p) => p.url));
    const twoLine = line('two_pods_redis', two, [...two.latenciesMs.a, ...two.latenciesMs.b], 2, SUBSCRIBERS);

    const out = [
      baseLine,
      twoLine,
      line('two_pods_redis_local', two, two.latenciesMs.a, 2, Math.ceil(SUBSCRIBERS / 2)),
      line('two_pods_redis_remote', two, two.latenciesMs.b, 2, Math.floor(SUBSCRIBERS / 2)),
      {
        bench: 'fanout',
        variant: 'ratio_two_pods_redis_vs_one_pod',
        p50: round(twoLine.p50_ms / baseLine.p50_ms, 2),
        p90: round(twoLine.p90_ms / baseLine.p90_ms, 2),
        p99: round(twoLine.p99_ms / baseLine.p99_ms, 2),
        deliveries_per_s: round(twoLine.deliveries_per_s / baseLine.deliveries_per_s, 2),
      },
    ];
    for (const o of out) process.stdout.write(`${JSON.stringify(o)}\n`);
    failed = [base, two].some((r) => r.missing > 0 || r.duplicates > 0);
    if (failed) logLine('FAILED: some subscriber missed an event or received one twice');
  } finally {
    await Promise.all(pods.map((p) => p.stop()));
    await redis.stop();
    await env.stop();
  }
  process.exit(failed ? 1 : 0);
}

main().catch((err: unknown) => {
  logLine(`fanout bench failed: ${(err as Error)?.stack ?? String(err)}`);
  process.exit(1);
});
