/**
 * Issue 27: cheap clients against the built relay on a real Postgres writer + streaming replica,
 * one attack per scenario (lib/abuse-scenarios.ts says what each sends, at the issue's sizes),
 * with a well-behaved victim measured before (idle) and during the attack.
 *
 * Per scenario, on a fresh pair: the data the attack reads is published through a seeding relay
 * (quotas lifted), then the relay under test starts as deploy/k8s runs it: `--max-old-space-size`
 * from `--heap` (default 288, the deployment's; `--heap default` leaves Node's own limit), the
 * ConfigMap's replica read budget (2000 ms) and verifier threads (2), the default quotas, and an
 * owner key (RELAY_OWNER_PUBKEY) for the admin's bans. Then:
 * - the victim (lib/abuse-victim.ts: own key, one channel) sends EVENT, REQ and connect+AUTH on
 *   fixed schedules for `--idle-seconds`, then through the attack's `--seconds`;
 * - `/readyz` is asked every 500 ms and the owner bans a subscribed key once while idle and every
 *   5 s during the attack (lib/abuse-probes.ts);
 * - the relay's RSS (/proc), heap in use and event-loop delay maximum (/metrics) are sampled
 *   (lib/abuse-watch.ts), and its refusal counters are read before and after the attack;
 * - the attacker (lib/abuse-attack.child.ts, its own process, at `--attacker-nice`) starts at the
 *   end of the idle phase and is stopped after `--seconds` or when the relay exits.
 *
 *   npm run bench:abuse -- --scenario <name>|all [--heap 288|default|<MB>] [--seconds N]
 *     [--idle-seconds 10] [--scale 1] [--keys N] [--sockets N] [--rate N] [--values N]
 *     [--attacker-nice 0] [--postgres-nice 0] [--client-ip-header x-forwarded-for]
 *     [--relay-cpu-prof DIR] [--relay-entry path/to/dist/src/main.js]
 *
 * `--relay-entry` runs another build of the relay (a checkout of main, for a before/after).
 * `--attacker-nice 19 --postgres-nice 10` let the relay have the cores first on a machine that also
 * runs the attackers and the database (as when they are elsewhere); the defaults share them evenly.
 *
 * `BENCH_PG_SLOW_MS=N` has the writer log every statement that ran N ms or longer to its log file
 * (`primary.log` in the pair's directory, named on stderr; the directory is removed at the end).
 *
 * One JSON line per scenario on stdout; progress on stderr. `--scale 0.1` shrinks the counts
 * (keys, sockets, filter values) to a tenth. The attackers and the victim name different client
 * addresses in `--client-ip-header` (the relay trusts it from loopback; `none`: send none). Needs
 * `ulimit -n` above the scenario's sockets + 256.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_CONNECTIONS_PER_IP, defaultConnectionReserve } from '../src/config/app-config.js';
import { PgCluster } from '../src/database/embedded/pg-cluster.js';
import { logLine, quietPool, RELAY_ENTRY, runBench, spawnRelay } from './lib/bench-env.js';
import { fastSigner } from './lib/fast-sign.js';
import { cpuSince, processCpuSeconds, sampleCpu } from './lib/cpu-usage.js';
import { startAttacker } from './lib/abuse-attack.js';
import { SCENARIO_DEFAULTS, SCENARIOS, type AttackPlan, type ScenarioName } from './lib/abuse-scenarios.js';
import { seed } from './lib/abuse-seed.js';
import { Victim } from './lib/abuse-victim.js';
import { BanProbe, ReadyzProbe } from './lib/abuse-probes.js';
import { RelayWatch } from './lib/abuse-watch.js';
import { scenarioLine, type RunRecord } from './lib/abuse-report.js';

const { values: args } = parseArgs({
  options: {
    scenario: { type: 'string', default: 'all' },
    heap: { type: 'string', default: '288' },
    seconds: { type: 'string' },
    'idle-seconds': { type: 'string', default: '10' },
    scale: { type: 'string', default: '1' },
    keys: { type: 'string' },
    sockets: { type: 'string' },
    rate: { type: 'string' },
    values: { type: 'string' },
    'attacker-nice': { type: 'string', default: '0' },
    'postgres-nice': { type: 'string', default: '0' },
    'client-ip-header': { type: 'string', default: 'x-forwarded-for' },
    'relay-cpu-prof': { type: 'string' },
    'relay-entry': { type: 'string' },
  },
});

/**
 * The relay's configuration as deploy/k8s ships it (ConfigMap), the default quotas, and the
 * default connection limits (which the other benches lift): the bench is the proxy the relay
 * trusts, and names the attackers' and the victim's addresses in `--client-ip-header`.
 */
const DEPLOYED_ENV = {
  BUZZ_REPLICA_READ_MAX_AGE_MS: '2000',
  BUZZ_VERIFIER_THREADS: '2',
  BUZZ_TRUSTED_PROXIES: 'loopback',
  BUZZ_MAX_CONNECTIONS_PER_IP: String(DEFAULT_MAX_CONNECTIONS_PER_IP),
  BUZZ_CONNECTION_RESERVE: String(defaultConnectionReserve(DEFAULT_MAX_CONNECTIONS)),
  BUZZ_RATE_LIMIT_HUMAN_WS_EVENTS_PER_SEC: '10',
  BUZZ_RATE_LIMIT_HUMAN_MESSAGES_PER_MIN: '60',
  BUZZ_RATE_LIMIT_HUMAN_API_CALLS_PER_MIN: '300',
};
const BAN_EVERY_MS = 5000;
const ATTACKER_ADDRESS = '203.0.113.7';
const VICTIM_ADDRESS = '198.51.100.1';

/** The header naming a client's address; `--client-ip-header none` sends none (everyone is 127.0.0.1). */
function clientIpHeader(): string | undefined {
  const h = args['client-ip-header'];
  return h === 'none' ? undefined : h;
}

function heapArgs(heap: string): string[] {
  if (heap === 'default') return [];
  if (!/^\d+$/.test(heap)) throw new Error(`--heap must be a number of MB or "default", got ${heap}`);
  return [`--max-old-space-size=${heap}`];
}

function planFor(name: ScenarioName, relayUrl: string, author: string | undefined): AttackPlan {
  const d = SCENARIO_DEFAULTS[name];
  const scale = Number(args.scale);
  const scaled = (n: number, flag: string | undefined) => (flag !== undefined ? Number(flag) : Math.max(1, Math.round(n * scale)));
  const header = clientIpHeader();
  return {
    scenario: name,
    kind: d.kind,
    relayUrl,
    headers: header ? { [header]: ATTACKER_ADDRESS } : {},
    keys: scaled(d.keys, args.keys),
    sockets: scaled(d.sockets, args.sockets),
    ratePerKey: args.rate !== undefined ? Number(args.rate) : d.ratePerKey,
    verb: d.verb,
    closeAtEose: d.closeAtEose,
    frames: d.frames,
    frameBytes: d.frameBytes,
    values: scaled(d.values, args.values),
    author,
  };
}

/**
 * Both postmasters and their processes at `nice` (new backends inherit it): on a machine that
 * also runs the database, the relay then gets the cores first, as when the database is elsewhere.
 */
function renicePostgres(cluster: PgCluster, nice: number): void {
  if (nice === 0) return;
  for (const role of ['primary', 'replica']) {
    const pid = Number(readFileSync(path.join(cluster.baseDir, role, 'postmaster.pid'), 'utf8').split('\n')[0]);
    const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').split(/\s+/).filter(Boolean);
    execFileSync('renice', ['-n', String(nice), '-p', String(pid), ...children], { stdio: 'ignore' });
  }
}

/** A fresh pair with the scenario's data; resolves with the pair and the seed's author. */
async function preparePair(name: ScenarioName) {
  const cluster = await PgCluster.start({ persistent: false, withReplica: true });
  renicePostgres(cluster, Number(args['postgres-nice']));
  const { writerUrl, readerUrl } = await cluster.createDatabase('buzz_bench');
  await cluster.waitForDatabaseOnReplica('buzz_bench');
  const dbEnv = { DATABASE_URL: writerUrl, READ_DATABASE_URL: readerUrl ?? '' };
  const kind = SCENARIO_DEFAULTS[name].seed;
  let author: string | undefined;
  if (kind !== 'none') {
    const seeder = await spawnRelay(dbEnv);
    try {
      author = await seed(seeder.url, kind);
    } finally {
      await seeder.stop();
    }
    const pool = quietPool(writerUrl, 1);
    await pool.query('vacuum (analyze) events').finally(() => pool.end());
    await cluster.waitForReplica(60_000);
  }
  if (process.env.BENCH_PG_SLOW_MS) {
    const pool = quietPool(writerUrl, 1);
    await pool.query(`alter system set log_min_duration_statement = ${Number(process.env.BENCH_PG_SLOW_MS)}`);
    await pool.query('select pg_reload_conf()').finally(() => pool.end());
    logLine(`writer log: ${cluster.baseDir}`);
  }
  return { cluster, dbEnv, author };
}

async function runScenario(name: ScenarioName): Promise<Record<string, unknown>> {
  const d = SCENARIO_DEFAULTS[name];
  const seconds = Number(args.seconds ?? d.seconds);
  const idleMs = Number(args['idle-seconds']) * 1000;
  const { cluster, dbEnv, author } = await preparePair(name);
  const owner = fastSigner();
  const profDir = args['relay-cpu-prof'];
  const nodeArgs = [...heapArgs(args.heap), ...(profDir ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : [])];
  const relay = await spawnRelay({ ...dbEnv, ...DEPLOYED_ENV, RELAY_OWNER_PUBKEY: owner.pubkey }, args['relay-entry'] ?? RELAY_ENTRY, nodeArgs);
  const header = clientIpHeader();
  const plan = planFor(name, relay.url, author);
  logLine(`${name}: relay pid ${relay.child.pid} (${nodeArgs.join(' ') || 'default heap'}); ${d.description}`);
  const watch = new RelayWatch(relay.child, relay.url);
  try {
    const victim = await Victim.start(relay.url, header ? { [header]: VICTIM_ADDRESS } : {});
    const bans = await BanProbe.connect(relay.url, owner, 1 + Math.ceil((seconds * 1000) / BAN_EVERY_MS));
    const attacker = await startAttacker(plan, Number(args['attacker-nice']));
    const readyz = new ReadyzProbe(relay.url.replace(/^ws/, 'http'));
    const logFrom = relay.output().length;
    victim.run();
    await sleep(idleMs / 2);
    bans.banNext();
    await sleep(idleMs / 2);
    const before = await watch.scrape();
    const cpu0 = sampleCpu(relay.child.pid ?? 0, cluster.baseDir);
    const attackerCpu0 = processCpuSeconds(attacker.pid, true);
    const attackStart = performance.now();
    logLine(`${name}: attack starts (${JSON.stringify({ keys: plan.keys, sockets: plan.sockets, rate: plan.ratePerKey, values: plan.values })}) for ${seconds} s`);
    await attacker.go();
    const banTimer = setInterval(() => bans.banNext(), BAN_EVERY_MS);
    const banFirst = setTimeout(() => bans.banNext(), 2000);
    await Promise.race([sleep(seconds * 1000), watch.exited]);
    clearInterval(banTimer);
    clearTimeout(banFirst);
    const attackEnd = performance.now();
    const cpu = cpuSince(cpu0, sampleCpu(relay.child.pid ?? 0, cluster.baseDir));
    const attackerCpu = processCpuSeconds(attacker.pid, true) - attackerCpu0;
    const attack = await attacker.stop();
    logLine(`${name}: attack over after ${Math.round((attackEnd - attackStart) / 1000)} s${watch.exit ? ` (relay exited: ${JSON.stringify(watch.exit)})` : ''}`);
    const [victimSamples, readyzSamples, banSamples] = await Promise.all([victim.stop(), readyz.stop(), bans.stop()]);
    const after = await watch.scrape();
    await watch.stop();
    const record: RunRecord = {
      name,
      plan,
      seconds,
      heap: args.heap,
      attackStart,
      attackEnd,
      victim: victimSamples,
      readyz: readyzSamples,
      bans: banSamples,
      attack,
      watch,
      before,
      after,
      relayOutput: relay.output().slice(logFrom),
      cpu: { relay: cpu.relay, postgres: cpu.postgres, writer: cpu.writer, replica: cpu.replica, attacker: attackerCpu },
    };
    return scenarioLine(record);
  } catch (err) {
    logLine(relay.output().slice(-4000));
    throw err;
  } finally {
    await watch.stop();
    await relay.stop();
    await cluster.stop();
  }
}

async function main(): Promise<number> {
  const names = args.scenario === 'all' ? [...SCENARIOS] : args.scenario.split(',');
  for (const n of names) if (!(SCENARIOS as readonly string[]).includes(n)) throw new Error(`unknown scenario ${n} (known: ${SCENARIOS.join(', ')}, all)`);
  const build = args['relay-entry'] ?? 'this checkout';
  for (const name of names as ScenarioName[]) console.log(JSON.stringify({ relay_build: build, ...(await runScenario(name)) }));
  return 0;
}

runBench(main);
