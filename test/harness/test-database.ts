/**
 * One fresh database per test file, cloned from the migrated `buzz_template` that the jest
 * globalSetup built (CREATE DATABASE ... TEMPLATE takes ~30 ms), and visible on the replica
 * before this resolves. Fault helpers act on the run's single shared replica: fault tests must
 * not run concurrently with other files (npm test uses --runInBand), and drop() heals any fault
 * a test left behind.
 *
 *   const db = await createTestDatabase();
 *   afterAll(() => db.drop());
 */
import { randomBytes } from 'node:crypto';
import { Pool } from 'pg';

import { PgCluster } from '../../src/database/embedded/pg-cluster.js';
import type { PgClusterInfo } from '../../src/database/embedded/pg-cluster.types.js';
import { waitForReplicaCatchUp, waitUntilConnectable } from '../../src/database/embedded/pg-replication.js';
import { ReplicaFaults } from './replica-faults.js';

/** Fault injection on the shared replica. Every method throws when `supported` is false. */
export interface FaultControl {
  readonly supported: boolean;
  readonly unsupportedReason?: string;
  /** Fast shutdown: pooled reader connections get 57P01, new ones ECONNREFUSED. */
  stopReplica(): Promise<void>;
  startReplica(): Promise<void>;
  /** SIGSTOP the postmaster and its children: TCP accepts, nothing answers. Thaw before pool.end(). */
  freezeReplica(): Promise<void>;
  thawReplica(): Promise<void>;
  /** Replica keeps receiving WAL but stops applying it: new writes stay invisible there. */
  pauseReplay(): Promise<void>;
  resumeReplay(): Promise<void>;
  /** Thaw, start if stopped, resume replay. */
  heal(): Promise<void>;
  /** LSN-based: resolves once the replica replayed everything the writer has written so far. */
  waitForReplica(timeoutMs?: number): Promise<void>;
}

export interface TestDatabase {
  name: string;
  writerUrl: string;
  readerUrl: string;
  cluster: FaultControl;
  waitForReplica(timeoutMs?: number): Promise<void>;
  /** Heals faults, drops the database (WITH FORCE) and closes the harness's own connections. */
  drop(): Promise<void>;
}

export type FaultSupport = { supported: true } | { supported: false; reason: string };

/** The part of PgCluster the harness needs; an SQL-only stand-in serves external servers. */
interface ServerOps {
  createDatabase(name: string, template: string): Promise<unknown>;
  dropDatabase(name: string): Promise<void>;
  waitForReplica(timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

interface HarnessEnv {
  provider: string;
  writerAdminUrl: string;
  readerAdminUrl: string;
  template: string;
  cluster?: PgClusterInfo;
}

const DEFAULT_WAIT_MS = 10_000;
let sequence = 0;

/** Synchronous, so suites can pick `it` or `it.skip` while being defined. */
export function faultSupport(): FaultSupport {
  const provider = process.env.BUZZ_TEST_PG_PROVIDER;
  if (provider === 'local') return { supported: true };
  if (provider === 'external') {
    return {
      supported: false,
      reason:
        'BUZZ_TEST_DATABASE_URL / BUZZ_TEST_READ_DATABASE_URL point at external servers ' +
        'the harness cannot stop, freeze or pause',
    };
  }
  if (provider === 'docker') return { supported: false, reason: 'the docker provider has no fault injection' };
  return { supported: false, reason: 'not running under the integration project globalSetup' };
}

export async function createTestDatabase(): Promise<TestDatabase> {
  const env = readHarnessEnv();
  const name = uniqueDatabaseName();
  const { ops, cluster } = env.cluster ? localServers(PgCluster.attach(env.cluster)) : sqlOnlyServers(env);
  const readerUrl = withDatabase(env.readerAdminUrl, name);
  try {
    await ops.createDatabase(name, env.template);
    const deadline = Date.now() + DEFAULT_WAIT_MS;
    await ops.waitForReplica(DEFAULT_WAIT_MS);
    await waitUntilConnectable(readerUrl, deadline - Date.now());
  } catch (err) {
    await ops.dropDatabase(name).catch(() => undefined);
    await ops.close();
    throw err;
  }
  return {
    name,
    writerUrl: withDatabase(env.writerAdminUrl, name),
    readerUrl,
    cluster,
    waitForReplica: (timeoutMs = DEFAULT_WAIT_MS) => ops.waitForReplica(timeoutMs),
    drop: () => dropTestDatabase(name, ops, cluster),
  };
}

async function dropTestDatabase(name: string, ops: ServerOps, faults: FaultControl): Promise<void> {
  try {
    if (faults.supported) await faults.heal();
    await ops.dropDatabase(name);
  } finally {
    await ops.close();
  }
}

function readHarnessEnv(): HarnessEnv {
  const env = process.env;
  const writerAdminUrl = env.BUZZ_TEST_PG_WRITER_URL;
  const readerAdminUrl = env.BUZZ_TEST_PG_READER_URL;
  if (!env.BUZZ_TEST_PG_PROVIDER || !writerAdminUrl || !readerAdminUrl) {
    throw new Error(
      'createTestDatabase(): the Postgres harness env (BUZZ_TEST_PG_*) is missing. Run the suite ' +
        'through the jest `integration` project, whose globalSetup starts the servers.',
    );
  }
  return {
    provider: env.BUZZ_TEST_PG_PROVIDER,
    writerAdminUrl,
    readerAdminUrl,
    template: env.BUZZ_TEST_PG_TEMPLATE ?? 'buzz_template',
    cluster: env.BUZZ_TEST_PG_PROVIDER === 'local' ? clusterInfoFromEnv(env) : undefined,
  };
}

function clusterInfoFromEnv(env: NodeJS.ProcessEnv): PgClusterInfo {
  const [uid, gid] = (env.BUZZ_TEST_PG_RUNAS ?? '').split(':').map(Number);
  return {
    baseDir: required(env, 'BUZZ_TEST_PG_BASE'),
    binDir: required(env, 'BUZZ_TEST_PG_BIN'),
    writerPort: Number(required(env, 'BUZZ_TEST_PG_WRITER_PORT')),
    replicaPort: Number(required(env, 'BUZZ_TEST_PG_REPLICA_PORT')),
    runAs: Number.isInteger(uid) && Number.isInteger(gid) ? { uid, gid } : undefined,
    persistent: false,
  };
}

function required(env: NodeJS.ProcessEnv, key: string): string {
  const value = env[key];
  if (!value) throw new Error(`Postgres harness: ${key} is not set (globalSetup did not export it)`);
  return value;
}

/** The local pair: PgCluster's admin SQL, and real faults on its replica. */
function localServers(local: PgCluster): { ops: ServerOps; cluster: FaultControl } {
  const faults = new ReplicaFaults(local);
  const ops: ServerOps = {
    createDatabase: (name, template) => local.createDatabase(name, template),
    dropDatabase: (name) => local.dropDatabase(name),
    waitForReplica: (timeoutMs) => local.waitForReplica(timeoutMs),
    close: async () => {
      await Promise.all([local.close(), faults.close()]);
    },
  };
  return { ops, cluster: clusterFaults(local, faults) };
}

function sqlOnlyServers(env: HarnessEnv): { ops: ServerOps; cluster: FaultControl } {
  const ops = sqlOnlyOps(env);
  return { ops, cluster: unsupportedFaults(ops) };
}

function clusterFaults(cluster: PgCluster, faults: ReplicaFaults): FaultControl {
  return {
    supported: true,
    stopReplica: () => faults.stopReplica(),
    startReplica: () => faults.startReplica(),
    freezeReplica: () => faults.freezeReplica(),
    thawReplica: () => faults.thawReplica(),
    pauseReplay: () => faults.pauseReplay(),
    resumeReplay: () => faults.resumeReplay(),
    heal: () => faults.heal(),
    waitForReplica: (timeoutMs = DEFAULT_WAIT_MS) => cluster.waitForReplica(timeoutMs),
  };
}

function unsupportedFaults(ops: ServerOps): FaultControl {
  const support = faultSupport();
  const reason = support.supported ? 'fault injection unavailable' : support.reason;
  const fail = async (): Promise<never> => {
    throw new Error(`fault injection unavailable: ${reason} (guard the test with faultSupport())`);
  };
  return {
    supported: false,
    unsupportedReason: reason,
    stopReplica: fail,
    startReplica: fail,
    freezeReplica: fail,
    thawReplica: fail,
    pauseReplay: fail,
    resumeReplay: fail,
    heal: fail,
    waitForReplica: (timeoutMs = DEFAULT_WAIT_MS) => ops.waitForReplica(timeoutMs),
  };
}

/** External / docker servers: plain SQL through the maintenance URLs. */
function sqlOnlyOps(env: HarnessEnv): ServerOps {
  const writer = adminPool(env.writerAdminUrl);
  const reader = adminPool(env.readerAdminUrl);
  return {
    createDatabase: async (name, template) => {
      await writer.query(`CREATE DATABASE ${quoteIdent(name)} TEMPLATE ${quoteIdent(template)}`);
    },
    dropDatabase: async (name) => {
      await writer.query(`DROP DATABASE IF EXISTS ${quoteIdent(name)} WITH (FORCE)`);
    },
    waitForReplica: (timeoutMs = DEFAULT_WAIT_MS) => waitForReplicaCatchUp(writer, reader, timeoutMs),
    close: async () => {
      await Promise.all([writer.end(), reader.end()]);
    },
  };
}

function adminPool(url: string): Pool {
  const pool = new Pool({ connectionString: url, max: 2, connectionTimeoutMillis: 5000, allowExitOnIdle: true });
  pool.on('error', () => undefined); // a restarting server must not crash the test process
  return pool;
}

/** buzz_t_<worker>_<pid>_<seq>_<random>: unique across workers, files and runs. */
function uniqueDatabaseName(): string {
  sequence += 1;
  const worker = process.env.JEST_WORKER_ID ?? '0';
  return `buzz_t_${worker}_${process.pid}_${sequence}_${randomBytes(3).toString('hex')}`;
}

function withDatabase(adminUrl: string, database: string): string {
  const url = new URL(adminUrl);
  url.pathname = `/${database}`;
  return url.toString();
}

function quoteIdent(name: string): string {
  if (!/^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(name)) throw new Error(`invalid database name "${name}"`);
  return `"${name}"`;
}
