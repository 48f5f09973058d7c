/**
 * CPU time per operation: on a small shared machine throughput swings with whatever else runs,
 * while CPU seconds spent per event or per query barely move, so the benches report both. Read
 * from /proc (Linux; clock ticks assumed 100 per second); NaN where /proc is unavailable.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';

export interface CpuSample {
  /** The relay process (all its threads, signature workers included) and any child processes (nostream's workers). */
  relay: number;
  /** Both postmasters, their live children and the children they have already reaped. */
  postgres: number;
  /** This bench process. */
  client: number;
  /** The postgres figure split by server (the replica answers routed reads; the writer everything else). */
  writer?: number;
  replica?: number;
}

export function sampleCpu(relayPid: number, clusterBaseDir: string): CpuSample {
  const client = process.cpuUsage();
  const writer = postmasterCpuSeconds(path.join(clusterBaseDir, 'primary'));
  const replica = postmasterCpuSeconds(path.join(clusterBaseDir, 'replica'));
  return {
    relay: processTree(relayPid).reduce((sum, pid) => sum + (processCpuSeconds(pid, pid === relayPid) || 0), 0) || Number.NaN,
    postgres: writer + replica,
    client: (client.user + client.system) / 1e6,
    writer,
    replica,
  };
}

export function cpuSince(before: CpuSample, after: CpuSample): CpuSample {
  return {
    relay: after.relay - before.relay,
    postgres: after.postgres - before.postgres,
    client: after.client - before.client,
    writer: (after.writer ?? Number.NaN) - (before.writer ?? Number.NaN),
    replica: (after.replica ?? Number.NaN) - (before.replica ?? Number.NaN),
  };
}

/** utime + stime (+ cutime + cstime of reaped children when asked), /proc/PID/stat fields 14-17. */
export function processCpuSeconds(pid: number, withReapedChildren: boolean): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ').map(Number);
    return (f[11] + f[12] + (withReapedChildren ? f[13] + f[14] : 0)) / 100;
  } catch {
    return Number.NaN;
  }
}

/** pid and its live descendants (empty when pid is gone). */
export function processTree(pid: number): number[] {
  try {
    const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').split(/\s+/).filter(Boolean).map(Number);
    return [pid, ...children.flatMap(processTree)];
  } catch {
    return [];
  }
}

/** A postmaster, its live backends and auxiliaries, and the exited backends it has reaped. */
function postmasterCpuSeconds(dataDir: string): number {
  try {
    const pid = Number(readFileSync(path.join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
    const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').split(/\s+/).filter(Boolean).map(Number);
    return children.reduce((sum, child) => sum + (processCpuSeconds(child, false) || 0), processCpuSeconds(pid, true));
  } catch {
    return Number.NaN;
  }
}
