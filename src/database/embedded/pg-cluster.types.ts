/**
 * The shapes shared by the embedded Postgres pieces (pg-cluster.ts and the files it is built
 * from): options, the serialisable cluster description, the one error class, and the on-disk
 * layout of a node (`<baseDir>/primary`, `<baseDir>/replica`, one log file each).
 */
import { join } from 'node:path';

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

/** Every failure of the embedded cluster; `kind` lets callers (the npm start launcher) react to some. */
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

export type NodeRole = 'primary' | 'replica';

export interface PgNode {
  role: NodeRole;
  dataDir: string;
  logFile: string;
}

export const LOOPBACK = '127.0.0.1';
export const SUPERUSER = 'postgres';
export const NOOP = (): void => undefined;

export function nodeAt(baseDir: string, role: NodeRole): PgNode {
  return { role, dataDir: join(baseDir, role), logFile: join(baseDir, `${role}.log`) };
}

export function pgUrl(port: number, database: string): string {
  return `postgres://${SUPERUSER}@${LOOPBACK}:${port}/${encodeURIComponent(database)}`;
}

export function delay(ms: number, opts: { unref?: boolean } = {}): Promise<void> {
  return new Promise((resolvePromise) => {
    const timer = setTimeout(resolvePromise, ms);
    if (opts.unref) timer.unref();
  });
}
