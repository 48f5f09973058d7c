/**
 * One abuse scenario's JSON line: the victim's latencies before (idle) and during the attack, what
 * was refused (victim, attackers, and the relay's own refusal counters), the relay's memory and
 * event-loop delay, `/readyz`, the admin's bans, whether the process survived, and issue 27's goals.
 */
import { round } from './bench-env.js';
import type { AttackTally } from './abuse-attack.js';
import type { AttackPlan, ScenarioName } from './abuse-scenarios.js';
import type { BanSample, ReadyzSample } from './abuse-probes.js';
import type { VictimProbe, VictimSample } from './abuse-victim.js';
import { gaugeMax, type RelayWatch, type Scrape } from './abuse-watch.js';
import { countBy, deltaBy, sumOf, tallyLogLines, type Sample } from './storm-stats.js';

export interface RunRecord {
  readonly name: ScenarioName;
  readonly plan: AttackPlan;
  readonly seconds: number;
  readonly heap: string;
  readonly attackStart: number;
  readonly attackEnd: number;
  readonly victim: readonly VictimSample[];
  readonly readyz: readonly ReadyzSample[];
  readonly bans: readonly BanSample[];
  readonly attack: { tally: AttackTally; openSockets: number };
  readonly watch: RelayWatch;
  readonly before: Scrape | undefined;
  readonly after: Scrape | undefined;
  readonly relayOutput: string;
  /** CPU seconds over the attack: the relay, the Postgres pair, the attacker process. */
  readonly cpu: { relay: number; postgres: number; writer?: number; replica?: number; attacker: number };
}

const MIB = 2 ** 20;
const mb = (bytes: number) => round(bytes / MIB, 1);

/** Nearest-rank percentile of unsorted values (NaN when empty). */
function pct(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return round(sorted[Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length))) - 1], 1);
}

function latency(samples: readonly VictimSample[]) {
  const served = samples.filter((s) => s.outcome === '').map((s) => s.ms);
  return { n: samples.length, not_served: samples.length - served.length, p50_ms: pct(served, 50), p95_ms: pct(served, 95), max_ms: pct(served, 100) };
}

/** Counters whose name says refusal, shedding or loss, and rejected route decisions: after − before per series, zeros left out. */
function refusalDeltas(before: readonly Sample[], after: readonly Sample[]): Record<string, number> {
  const named = /refus|reject|shed|timeouts|disconnect|closes|evict|notices|lost|budget|paced/;
  const interesting = (s: Sample) =>
    !/_(bucket|sum|count)$/.test(s.name) && (named.test(s.name) || (s.name === 'buzz_db_route_decision' && s.labels.decision === 'rejected'));
  const key = (s: Sample) => `${s.name}{${Object.entries(s.labels).map(([k, v]) => `${k}=${v}`).join(',')}}`;
  const acc = new Map<string, number>();
  for (const s of after) if (interesting(s)) acc.set(key(s), s.value);
  for (const s of before) if (acc.has(key(s))) acc.set(key(s), acc.get(key(s))! - s.value);
  return Object.fromEntries([...acc].filter(([, v]) => v > 0).sort(([, a], [, b]) => b - a));
}

export function scenarioLine(r: RunRecord): Record<string, unknown> {
  const idle = (t: number) => t < r.attackStart;
  const during = (t: number) => t >= r.attackStart && t <= r.attackEnd;
  const victim = (probe: VictimProbe, phase: (t: number) => boolean) => latency(r.victim.filter((s) => s.probe === probe && phase(s.sentAt)));
  const refusals = (phase: (t: number) => boolean) => countBy(r.victim.filter((s) => phase(s.sentAt) && s.outcome !== '').map((s) => `${s.probe}: ${s.outcome}`));
  const readyz = (phase: (t: number) => boolean) => r.readyz.filter((s) => phase(s.at));
  const bansDuring = r.bans.filter((b) => during(b.at));
  const banIdle = r.bans.find((b) => idle(b.at));
  const rssIn = (phase: (t: number) => boolean) => Math.max(0, ...r.watch.rss.filter((s) => phase(s.at)).map((s) => s.bytes));
  const oom = /heap out of memory|Allocation failed/i.test(r.relayOutput);
  const exit = r.watch.exit;
  const lag = (from: number, to: number) => round(gaugeMax(r.watch.scrapes, 'nodejs_eventloop_lag_max_seconds', from, to) * 1000, 1);
  const heapPeak = gaugeMax(r.watch.scrapes, 'nodejs_heap_size_used_bytes', r.attackStart, r.attackEnd);
  const endGauge = (name: string) => (r.after ? sumOf(r.after.samples, name) : null);
  // The last answered scrape: the final one, or the last before the relay died.
  const last = r.after ?? r.watch.scrapes.at(-1);
  const line = {
    bench: 'abuse',
    scenario: r.name,
    attack: { keys: r.plan.keys, sockets: r.plan.sockets, rate_per_key: round(r.plan.ratePerKey, 2), values: r.plan.values },
    heap: r.heap === 'default' ? 'node default' : `--max-old-space-size=${r.heap}`,
    attack_s: round((r.attackEnd - r.attackStart) / 1000, 1),
    survived: exit === undefined && !oom,
    ...(exit ? { exit: { after_s: round((exit.at - r.attackStart) / 1000, 1), code: exit.code, signal: exit.signal } } : {}),
    oom,
    victim_idle: { event: victim('event', idle), req: victim('req', idle), auth: victim('auth', idle) },
    victim_during: { event: victim('event', during), req: victim('req', during), auth: victim('auth', during) },
    // The slowest answers during the attack and when they were sent (s after it began): a tail at
    // the attack's start, or at regular intervals, points at different causes.
    victim_slowest_during: r.victim
      .filter((s) => during(s.sentAt) && s.outcome === '')
      .sort((a, b) => b.ms - a.ms)
      .slice(0, 3)
      .map((s) => ({ probe: s.probe, at_s: Math.round((s.sentAt - r.attackStart) / 100) / 10, ms: Math.round(s.ms) })),
    victim_refusals_idle: refusals(idle),
    victim_refusals_during: refusals(during),
    readyz_idle_max_ms: pct(readyz(idle).map((s) => s.ms), 100),
    readyz_during_max_ms: pct(readyz(during).map((s) => s.ms), 100),
    readyz_during: countBy(readyz(during).map((s) => s.outcome)),
    ban_idle: banIdle ? { ack_ms: round(banIdle.ackMs ?? Number.NaN, 1), enforced_ms: round(banIdle.enforcedMs ?? Number.NaN, 1) } : null,
    ban_during: {
      n: bansDuring.length,
      ack_max_ms: pct(bansDuring.map((b) => b.ackMs ?? Number.POSITIVE_INFINITY), 100),
      enforced_max_ms: pct(bansDuring.map((b) => b.enforcedMs ?? Number.POSITIVE_INFINITY), 100),
      failed: countBy(bansDuring.filter((b) => b.outcome !== '' || b.enforcedMs === undefined).map((b) => b.outcome || 'not enforced')),
    },
    rss_idle_mb: mb(rssIn(idle)),
    rss_peak_mb: mb(rssIn((t) => t >= r.attackStart)),
    rss_high_water_mb: mb(r.watch.rssHighWater),
    heap_used_peak_mb: mb(heapPeak),
    event_loop_delay_max_idle_ms: lag(Number.NEGATIVE_INFINITY, r.attackStart),
    event_loop_delay_max_ms: lag(r.attackStart, r.attackEnd),
    relay_refusals: r.before && last ? refusalDeltas(r.before.samples, last.samples) : null,
    route_decisions: r.before && last ? deltaBy(r.before.samples, last.samples, 'buzz_db_route_decision', {}, ['decision', 'reason']) : null,
    writer_acquires: r.before && last ? deltaBy(r.before.samples, last.samples, 'buzz_db_pool_acquire_attempts_total', { pool_role: 'writer' }, ['operation', 'outcome']) : null,
    // Identical history reads served by one in flight (single flight), with no read of their own.
    history_reads_coalesced: r.before && last ? (deltaBy(r.before.samples, last.samples, 'buzz_history_reads_coalesced_total', {}, [])[''] ?? 0) : null,
    cpu_s: { relay: round(r.cpu.relay, 1), postgres: round(r.cpu.postgres, 1), writer: round(r.cpu.writer ?? Number.NaN, 1), replica: round(r.cpu.replica ?? Number.NaN, 1), attacker: round(r.cpu.attacker, 1), attack_s: round((r.attackEnd - r.attackStart) / 1000, 1) },
    attacker: { ...r.attack.tally, open_sockets_at_end: { n: r.attack.openSockets } },
    end_state: { ban_listener_connected: endGauge('buzz_ban_listener_connected'), fence_open: endGauge('buzz_db_replica_fence_open'), readiness_state: endGauge('buzz_readiness_state') },
    relay_log: tallyLogLines(r.relayOutput),
  };
  return { ...line, goals: goals(line) };
}

/** Issue 27's goals for this run (a benchmark verdict, not a test). */
function goals(l: {
  survived: boolean;
  rss_peak_mb: number;
  victim_idle: Record<string, { p95_ms: number }>;
  victim_during: Record<string, { p95_ms: number; not_served: number }>;
  readyz_during_max_ms: number;
  ban_during: { ack_max_ms: number; enforced_max_ms: number };
}): Record<string, boolean> {
  const d = l.victim_during;
  const within10x = (p: string) => d[p].p95_ms <= 10 * l.victim_idle[p].p95_ms;
  return {
    survived: l.survived,
    rss_under_512_mib: l.rss_peak_mb < 512,
    victim_all_served: d.event.not_served + d.req.not_served + d.auth.not_served === 0,
    victim_p95_within_10x_idle: within10x('event') && within10x('req') && within10x('auth'),
    victim_event_p95_le_250_ms: d.event.p95_ms <= 250,
    readyz_le_1_s: l.readyz_during_max_ms <= 1000,
    ban_le_1_s: l.ban_during.ack_max_ms <= 1000 && l.ban_during.enforced_max_ms <= 1000,
  };
}
