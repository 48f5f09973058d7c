/**
 * `npm start` without DATABASE_URL: a persistent local Postgres writer + streaming replica under
 * `<repo>/.data/pg` (or /tmp/buzz-relay-data/pg when the postgres user cannot reach the repo),
 * reused across runs, with the application database `buzz` created on first use.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { PgCluster } from './pg-cluster.js';
import { PgClusterError } from './pg-cluster.types.js';

export interface EmbeddedDatabase {
  writerUrl: string;
  /** The replica's copy of the same database. */
  readerUrl?: string;
  /** Where both servers keep their data. */
  dataDir: string;
  /** Fast shutdown of both servers; the data stays for the next start. */
  stop(): Promise<void>;
}

export interface EmbeddedDatabaseOptions {
  /** Default `<repo>/.data/pg`. */
  dataDir?: string;
  log: (msg: string) => void;
}

const APP_DATABASE = 'buzz';
const FALLBACK_DATA_DIR = '/tmp/buzz-relay-data/pg';

/** Where a relay of this checkout keeps its embedded state (embedded-state.ts): `.data`, then the fallback's parent. */
export function embeddedStateDirs(): string[] {
  return [join(repoRoot(), '.data'), dirname(FALLBACK_DATA_DIR)];
}
const REPLICA_WAIT_MS = 30_000;

export async function startEmbeddedDatabase(opts: EmbeddedDatabaseOptions): Promise<EmbeddedDatabase> {
  const cluster = await startPersistentCluster(opts);
  try {
    const urls = await ensureAppDatabase(cluster, opts.log);
    opts.log(`writer ${urls.writerUrl}, reader ${urls.readerUrl ?? '(none)'}, data in ${cluster.baseDir}`);
    return { ...urls, dataDir: cluster.baseDir, stop: () => cluster.stop() };
  } catch (err) {
    await cluster.stop().catch(() => undefined);
    throw err;
  }
}

async function startPersistentCluster(opts: EmbeddedDatabaseOptions): Promise<PgCluster> {
  const start = (baseDir: string): Promise<PgCluster> =>
    PgCluster.start({ baseDir, persistent: true, withReplica: true, log: opts.log });
  if (opts.dataDir !== undefined) return start(opts.dataDir);
  try {
    return await start(join(repoRoot(), '.data', 'pg'));
  } catch (err) {
    if (!(err instanceof PgClusterError) || err.kind !== 'path-access') throw err;
    opts.log(`${err.message}\nusing ${FALLBACK_DATA_DIR} instead`);
    return start(FALLBACK_DATA_DIR);
  }
}

async function ensureAppDatabase(
  cluster: PgCluster,
  log: (msg: string) => void,
): Promise<{ writerUrl: string; readerUrl?: string }> {
  if (!(await cluster.databaseExists(APP_DATABASE))) {
    await cluster.createDatabase(APP_DATABASE);
    log(`created database ${APP_DATABASE}`);
  }
  await cluster.waitForDatabaseOnReplica(APP_DATABASE, REPLICA_WAIT_MS);
  await cluster.close();
  return cluster.databaseUrls(APP_DATABASE);
}

/** The nearest ancestor of this file holding the buzz-relay package.json (src/ or dist/src/). */
function repoRoot(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  for (let dir = here; dir !== dirname(dir); dir = dirname(dir)) {
    if (isBuzzRelayPackage(join(dir, 'package.json'))) return dir;
  }
  return process.cwd();
}

function isBuzzRelayPackage(path: string): boolean {
  try {
    return (JSON.parse(readFileSync(path, 'utf8')) as { name?: unknown }).name === 'buzz-relay';
  } catch {
    return false;
  }
}
