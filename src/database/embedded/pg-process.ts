/**
 * Running the Postgres processes: commands run to completion (as the server's user when we are
 * root), `pg_ctl` start and stop of one node, its postmaster found from postmaster.pid, signals to
 * the postmaster and its children, and the watchdog that stops an ephemeral cluster whose owner
 * process died.
 */
import { ChildProcess, spawn } from 'node:child_process';
import { readdir, readFile, stat } from 'node:fs/promises';
import { basename, join } from 'node:path';

import { NOOP, PgClusterError, type PgNode, type RunAs } from './pg-cluster.types.js';

/** A start that failed because the port was taken: the caller retries on another port. */
export class PortInUseError extends PgClusterError {}

/** Children get a clean env: PG* variables (PGPORT, PGHOST, ...) would redirect the tools. */
function childEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (!key.startsWith('PG')) env[key] = value;
  }
  return { ...env, HOME: '/tmp', LC_ALL: 'C' };
}

/** Runs a command to completion (as `runAs` when given); resolves stdout+stderr, rejects with both. */
export function run(cmd: string, args: string[], runAs: RunAs | undefined, timeoutMs = 60_000): Promise<string> {
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

export async function startNode(binDir: string, runAs: RunAs | undefined, node: PgNode): Promise<void> {
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

export async function stopNode(
  binDir: string,
  runAs: RunAs | undefined,
  node: PgNode,
  mode: 'fast' | 'immediate',
): Promise<void> {
  if ((await runningPort(node)) === undefined) return;
  await run(join(binDir, 'pg_ctl'), ['-D', node.dataDir, '-m', mode, '-w', '-t', '30', '-s', 'stop'], runAs);
}

async function readTail(path: string, fromOffset: number): Promise<string> {
  const text = await readFile(path, 'utf8').catch(() => '');
  return text.slice(fromOffset).trim().split('\n').slice(-20).join('\n') || '(empty server log)';
}

async function fileSize(path: string): Promise<number> {
  return (await stat(path).catch(() => undefined))?.size ?? 0;
}

// ---------------------------------------------------------------------------------------------
// Running state and signals

/** The port a live postmaster of `node` listens on, from postmaster.pid; undefined if down. */
export async function runningPort(node: PgNode): Promise<number | undefined> {
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
export async function signalPostmasterFamily(node: PgNode, signal: 'SIGSTOP' | 'SIGCONT'): Promise<void> {
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

// ---------------------------------------------------------------------------------------------
// The orphan watchdog

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

export function startWatchdog(baseDir: string, nodes: PgNode[]): ChildProcess {
  const dataDirs = nodes.map((node) => node.dataDir);
  const args = ['-c', WATCHDOG_SCRIPT, 'buzz-pg-watchdog', String(process.pid), baseDir, ...dataDirs];
  const child = spawn('/bin/sh', args, { detached: true, stdio: 'ignore' });
  child.on('error', NOOP);
  child.unref();
  return child;
}
