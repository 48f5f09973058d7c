/**
 * Soak: mixed load against two relay pods on one redis-server and one Postgres writer + streaming
 * replica, for `--duration` seconds, while a fault schedule stops/starts the replica, freezes/thaws
 * it (SIGSTOP), pauses/resumes its WAL replay and kills/restarts redis-server. Then it verifies:
 *
 * - every event acknowledged with `OK true` is stored in the writer exactly once;
 * - every live subscriber (global and channel-scoped, on both pods) received every acknowledged
 *   event matching its filter that was published after it subscribed, exactly once.
 *
 * Publishers sign on the fly (tiny-secp256k1) and are spread over both pods; REQ readers on both
 * pods poll channel history and count their answers by outcome. The pods run with
 * BUZZ_REDIS_FAIL_MODE=local (unless set otherwise) so that they keep accepting events while
 * Redis is down: those are the events the post-reconnect gap fill must carry across pods.
 *
 * Prints one JSON summary on stdout; exits 1 when anything was lost or duplicated.
 *
 *   npm run soak -- [--duration 120] [--publishers 4] [--rate 5] [--subscribers 4] [--readers 1]
 */
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { startRedisServer, type RedisServer } from '../test/harness/redis-server.js';
import { ReplicaFaults } from '../test/harness/replica-faults.js';
import { NostrEvent } from '../src/nostr/nostr.types.js';
import { BenchConnection, type PublishItem } from './lib/bench-connection.js';
import { logLine, quietPool, round, spawnRelay, startBenchEnv, summarize, type BenchEnv, type RelayChild } from './lib/bench-env.js';
import { fastSigner } from './lib/fast-sign.js';
import { podMetric } from './lib/pod-metrics.js';

const { values: args } = parseArgs({
  options: {
    duration: { type: 'string', default: '120' },
    publishers: { type: 'string', default: '4' },
    /** Events per second per publisher. */
    rate: { type: 'string', default: '5' },
    /** Live subscribers per pod (alternately global and channel-scoped). */
    subscribers: { type: 'string', default: '4' },
    /** REQ readers per pod. */
    readers: { type: 'string', default: '1' },
    'read-interval-ms': { type: 'string', default: '500' },
  },
});
const DURATION_S = positive('duration');
const PUBLISHERS = positive('publishers');
const RATE = positive('rate');
const SUBSCRIBERS_PER_POD = positive('subscribers');
const READERS_PER_POD = positive('readers');
const READ_INTERVAL_MS = positive('read-interval-ms');
const OK_TIMEOUT_MS = 20_000;
const REQ_TIMEOUT_MS = 10_000;
const DRAIN_TIMEOUT_MS = 30_000;
const CHANNELS = 2;

function positive(name: keyof typeof args): number {
  const n = Number(args[name]);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`--${name} must be a positive number, got ${JSON.stringify(args[name])}`);
  return n;
}

interface Pod {
  readonly name: 'a' | 'b';
  readonly url: string;
}

interface Sent {
  readonly id: string;
  readonly channel: string | null;
  readonly sentAt: number;
  ok?: boolean;
  reason?: string;
}

interface Subscriber {
  readonly pod: Pod['name'];
  readonly channel: string | null;
  readonly conn: BenchConnection;
  readonly subscribedAt: number;
  readonly seen: Map<string, number>;
}

interface FaultRecord {
  at_s: number;
  action: string;
  took_ms: number;
  error?: string;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T | 'timeout'> {
  let timer: NodeJS.Timeout | undefined;
  const t = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), ms)));
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}

function bump(counts: Record<string, number>, key: string, by = 1): void {
  counts[key] = (counts[key] ?? 0) + by;
}

function itemOf(ev: NostrEvent): PublishItem {
  return { id: ev.id, frame: JSON.stringify(['EVENT', ev]) };
}

async function createChannels(pod: Pod): Promise<string[]> {
  const owner = fastSigner();
  const conn = await BenchConnection.open(pod.url, owner.sk);
  const ids = Array.from({ length: CHANNELS }, () => randomUUID());
  for (const [i, id] of ids.entries()) {
    const r = await conn.publishWindowed([itemOf(owner.sign(9007, [['h', id], ['name', `soak ${i}`]], ''))], 1);
    if (r.accepted !== 1) throw new Error(`channel creation refused: ${JSON.stringify(Object.fromEntries(r.reasons))}`);
  }
  conn.close();
  return ids;
}

async function openSubscribers(pods: readonly Pod[], channels: readonly string[], tag: string): Promise<Subscriber[]> {
  const subs: Subscriber[] = [];
  for (const pod of pods) {
    for (let i = 0; i < SUBSCRIBERS_PER_POD; i++) {
      const channel = i % 2 === 0 ? null : channels[(i >> 1) % channels.length];
      const conn = await BenchConnection.open(pod.url, fastSigner().sk);
      const filter = channel === null ? { kinds: [1], '#t': [tag] } : { kinds: [9], '#h': [channel] };
      const { end, reason } = await conn.req('live', filter);
      if (end !== 'EOSE') throw new Error(`subscriber on pod ${pod.name}: ${end} ${reason ?? ''}`);
      const sub: Subscriber = { pod: pod.name, channel, conn, subscribedAt: Date.now(), seen: new Map() };
      conn.onLiveEvent = (subId, ev) => {
        if (subId === 'live') sub.seen.set(ev.id, (sub.seen.get(ev.id) ?? 0) + 1);
      };
      subs.push(sub);
    }
  }
  return subs;
}

/** One publisher: paced at RATE events/s, alternating global and channel events, until `stopAt`. */
async function publishUntil(pod: Pod, channels: readonly string[], tag: string, stopAt: number, sent: Sent[], okMs: number[], errors: Record<string, number>): Promise<void> {
  const signer = fastSigner();
  const conn = await BenchConnection.open(pod.url, signer.sk);
  const interval = 1000 / RATE;
  let n = 0;
  for (let next = Date.now(); Date.now() < stopAt; n++) {
    await sleep(Math.max(0, next - Date.now()));
    next = Math.max(next + interval, Date.now());
    const channel = n % 2 === 0 ? null : channels[(n >> 1) % channels.length];
    const ev = channel === null ? signer.sign(1, [['t', tag]], `soak ${pod.name} ${n}`) : signer.sign(9, [['h', channel], ['t', tag]], `soak ${pod.name} ${n}`);
    const record: Sent = { id: ev.id, channel, sentAt: Date.now() };
    sent.push(record);
    const started = Date.now();
    const result = await withTimeout(conn.publishWindowed([itemOf(ev)], 1), OK_TIMEOUT_MS).catch((err: Error) => err);
    if (result === 'timeout') {
      bump(errors, 'no OK within 20 s');
      continue;
    }
    if (result instanceof Error) {
      bump(errors, `socket: ${result.message}`);
      return;
    }
    okMs.push(Date.now() - started);
    record.ok = result.accepted === 1;
    if (!record.ok) record.reason = [...result.reasons.keys()][0] ?? 'duplicate';
  }
  conn.close();
}

/** One REQ reader: channel history every READ_INTERVAL_MS until `stopAt`, outcomes counted. */
async function readUntil(pod: Pod, channels: readonly string[], stopAt: number, outcomes: Record<string, number>, reqMs: number[]): Promise<void> {
  let conn = await BenchConnection.open(pod.url, fastSigner().sk);
  for (let n = 0; Date.now() < stopAt; n++) {
    const subId = `read-${n}`;
    const result = await withTimeout(conn.req(subId, { kinds: [9], '#h': [channels[n % channels.length]], limit: 20 }), REQ_TIMEOUT_MS).catch((err: Error) => err);
    if (result === 'timeout') bump(outcomes, 'timeout');
    else if (result instanceof Error) bump(outcomes, `socket: ${result.message}`);
    else if (result.end === 'CLOSED') bump(outcomes, result.reason ?? 'closed');
    else {
      bump(outcomes, 'eose');
      reqMs.push(result.ms);
    }
    if (conn.open) conn.closeSubscription(subId);
    else conn = await BenchConnection.open(pod.url, fastSigner().sk);
    await sleep(READ_INTERVAL_MS);
  }
  conn.close();
}

/** The fault schedule, as fractions of the run. Each fault is undone before the next starts. */
function faultPlan(c: ReplicaFaults, redis: RedisServer): Array<[number, string, () => Promise<void>]> {
  return [
    [0.08, 'replica stop', () => c.stopReplica()],
    [0.18, 'replica start', () => c.startReplica()],
    [0.26, 'replica freeze (SIGSTOP)', () => c.freezeReplica()],
    [0.34, 'replica thaw', () => c.thawReplica()],
    [0.42, 'replay pause', () => c.pauseReplay()],
    [0.52, 'replay resume', () => c.resumeReplay()],
    [0.6, 'redis kill', () => redis.kill()],
    [0.68, 'redis restart', () => redis.restart()],
    [0.74, 'replica freeze + redis kill', async () => void (await Promise.all([c.freezeReplica(), redis.kill()]))],
    [0.8, 'replica thaw + redis restart', async () => void (await Promise.all([c.thawReplica(), redis.restart()]))],
  ];
}

async function runFaults(faults: ReplicaFaults, redis: RedisServer, start: number, timeline: FaultRecord[]): Promise<void> {
  for (const [fraction, action, run] of faultPlan(faults, redis)) {
    await sleep(start + fraction * DURATION_S * 1000 - Date.now());
    const t0 = Date.now();
    const record: FaultRecord = { at_s: round((t0 - start) / 1000, 1), action, took_ms: 0 };
    try {
      await run();
    } catch (err) {
      record.error = (err as Error).message;
    }
    record.took_ms = Date.now() - t0;
    timeline.push(record);
    logLine(`fault: ${action} at ${record.at_s}s (${record.took_ms} ms)${record.error ? ` failed: ${record.error}` : ''}`);
  }
}

function expectedFor(sub: Subscriber, acked: readonly Sent[]): Sent[] {
  return acked.filter((s) => s.sentAt >= sub.subscribedAt && s.channel === sub.channel);
}

async function storedCounts(writerUrl: string, ids: readonly string[]): Promise<Map<string, number>> {
  const pool = quietPool(writerUrl, 1);
  const counts = new Map<string, number>();
  try {
    for (let i = 0; i < ids.length; i += 5000) {
      const chunk = ids.slice(i, i + 5000).map((id) => Buffer.from(id, 'hex'));
      const { rows } = await pool.query<{ id: string; n: string }>("select encode(id, 'hex') as id, count(*) as n from events where id = any($1::bytea[]) group by id", [chunk]);
      for (const r of rows) counts.set(r.id, Number(r.n));
    }
  } finally {
    await pool.end();
  }
  return counts;
}

async function gapFillFigures(pods: readonly Pod[]): Promise<Record<string, Record<string, number>>> {
  const out: Record<string, Record<string, number>> = {};
  for (const pod of pods) {
    out[pod.name] = {
      delivered: await podMetric(pod.url, 'buzz_redis_gap_fill_events_total', 'outcome="delivered"'),
      duplicate: await podMetric(pod.url, 'buzz_redis_gap_fill_events_total', 'outcome="duplicate"'),
      left_out: await podMetric(pod.url, 'buzz_redis_gap_fill_events_total', 'outcome="left_out"'),
      fills: await podMetric(pod.url, 'buzz_redis_gap_fills_total'),
      limited: await podMetric(pod.url, 'buzz_redis_gap_fill_limited_total'),
      publish_failures: await podMetric(pod.url, 'buzz_redis_publish_failures_total'),
    };
  }
  return out;
}

async function main(): Promise<void> {
  const redis = await startRedisServer();
  process.env.BUZZ_REDIS_URL = redis.url;
  process.env.BUZZ_REDIS_FAIL_MODE ??= 'local';
  let env: BenchEnv | undefined;
  let podB: RelayChild | undefined;
  let failed = true;
  try {
    env = await startBenchEnv();
    podB = await spawnRelay({ DATABASE_URL: env.writerUrl, READ_DATABASE_URL: env.readerUrl });
    const pods: Pod[] = [
      { name: 'a', url: env.relayUrl },
      { name: 'b', url: podB.url },
    ];
    const tag = `soak-${Date.now()}`;
    const channels = await createChannels(pods[0]);
    const subs = await openSubscribers(pods, channels, tag);
    logLine(`soak: ${DURATION_S}s, ${PUBLISHERS} publishers x ${RATE}/s, ${subs.length} live subscribers, ${READERS_PER_POD * 2} readers, pods ${pods.map((p) => p.url).join(' ')}`);

    const sent: Sent[] = [];
    const okMs: number[] = [];
    const reqMs: number[] = [];
    const publishErrors: Record<string, number> = {};
    const reqOutcomes: Record<string, number> = {};
    const timeline: FaultRecord[] = [];
    const faults = new ReplicaFaults(env.cluster);
    const start = Date.now();
    const stopAt = start + DURATION_S * 1000;
    await Promise.all([
      ...Array.from({ length: PUBLISHERS }, (_, i) => publishUntil(pods[i % 2], channels, tag, stopAt, sent, okMs, publishErrors)),
      ...pods.flatMap((pod) => Array.from({ length: READERS_PER_POD }, () => readUntil(pod, channels, stopAt, reqOutcomes, reqMs))),
      runFaults(faults, redis, start, timeline),
    ]);
    await faults.heal();
    await faults.close();
    const loadSeconds = (Date.now() - start) / 1000;

    const acked = sent.filter((s) => s.ok === true);
    const drainDeadline = Date.now() + DRAIN_TIMEOUT_MS;
    const missingNow = () => subs.reduce((n, sub) => n + expectedFor(sub, acked).filter((s) => !sub.seen.has(s.id)).length, 0);
    while (missingNow() > 0 && Date.now() < drainDeadline) await sleep(250);
    await sleep(1000); // late duplicates would arrive within a round trip or a gap fill

    const stored = await storedCounts(env.writerUrl, sent.map((s) => s.id));
    const ackedNotStored = acked.filter((s) => !stored.has(s.id)).length;
    const storedTwice = [...stored.values()].filter((n) => n > 1).length;
    const perSubscriber = subs.map((sub) => {
      const expected = expectedFor(sub, acked);
      const delivered = expected.filter((s) => sub.seen.has(s.id)).length;
      const duplicated = [...sub.seen.values()].reduce((n, c) => n + Math.max(0, c - 1), 0);
      return { pod: sub.pod, filter: sub.channel === null ? 'global' : 'channel', expected: expected.length, delivered, missed: expected.length - delivered, duplicated, open: sub.conn.open };
    });
    const missed = perSubscriber.reduce((n, s) => n + s.missed, 0);
    const duplicateDeliveries = perSubscriber.reduce((n, s) => n + s.duplicated, 0);
    const rejected: Record<string, number> = {};
    for (const s of sent) if (s.ok === false) bump(rejected, s.reason ?? 'unknown');
    const lost = ackedNotStored + missed;
    const duplicated = storedTwice + duplicateDeliveries;
    const ok = summarize(okMs);
    const req = summarize(reqMs);
    const summary = {
      bench: 'soak',
      duration_s: DURATION_S,
      load_s: round(loadSeconds, 1),
      pods: 2,
      redis_fail_mode: process.env.BUZZ_REDIS_FAIL_MODE,
      publishers: PUBLISHERS,
      rate_per_publisher: RATE,
      live_subscribers: subs.length,
      readers: READERS_PER_POD * 2,
      events: {
        sent: sent.length,
        acknowledged: acked.length,
        rejected,
        publish_errors: publishErrors,
        stored: [...stored.keys()].length,
        acknowledged_stored_exactly_once: acked.filter((s) => stored.get(s.id) === 1).length,
        acknowledged_not_stored: ackedNotStored,
        stored_more_than_once: storedTwice,
        acknowledged_per_s: round(acked.length / loadSeconds, 1),
      },
      ok_latency_ms: { p50: ok.p50, p90: ok.p90, p99: ok.p99, max: ok.max },
      deliveries: {
        expected: perSubscriber.reduce((n, s) => n + s.expected, 0),
        delivered: perSubscriber.reduce((n, s) => n + s.delivered, 0),
        missed,
        duplicated: duplicateDeliveries,
        per_subscriber: perSubscriber,
      },
      reqs: { total: Object.values(reqOutcomes).reduce((a, b) => a + b, 0), outcomes: reqOutcomes, eose_ms: { p50: req.p50, p90: req.p90, p99: req.p99, max: req.max } },
      gap_fill: await gapFillFigures(pods),
      faults: timeline,
      lost,
      duplicated,
    };
    process.stdout.write(`${JSON.stringify(summary)}\n`);
    for (const sub of subs) sub.conn.close();
    failed = lost > 0 || duplicated > 0 || acked.length === 0;
    if (failed) logLine('FAILED: an acknowledged event was lost or something was duplicated');
  } finally {
    await podB?.stop();
    await env?.stop();
    await redis.stop();
  }
  process.exit(failed ? 1 : 0);
}

main().catch((err: unknown) => {
  logLine(`soak failed: ${(err as Error)?.stack ?? String(err)}`);
  process.exit(1);
});
