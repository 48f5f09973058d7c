/**
 * A real Postgres writer plus an optional streaming hot-standby replica, started from local
 * binaries on free random TCP ports (127.0.0.1 only, no unix sockets).
 *
 * Used by `npm start` when DATABASE_URL is unset (persistent mode, see embedded-database.ts), by
 * the benches and by the integration test harness (ephemeral mode, see test/harness, whose
 * replica-faults.ts stops, freezes and pauses the replica). The measured facts behind every
 * setting live in the project's pg-pair recipe; the short version:
 * - initdb / pg_ctl / pg_basebackup refuse root, so as root they run as `postgres` (or `nobody`);
 * - fsync is off but synchronous_commit stays on (off adds ~200 ms of replica lag);
 * - replication is asynchronous: callers wait with waitForReplica(), which compares LSNs;
 * - `primary_conninfo` and `port` live in our own included file, rewritten on every start.
 *
 * The pieces: pg-binaries.ts (binaries, user, base dir), pg-process.ts (commands, pg_ctl,
 * signals, watchdog), pg-bring-up.ts (initdb, base backup, ports), pg-replication.ts (waits).
 */
import type { ChildProcess } from 'node:child_process';
import { rm } from 'node:fs/promises';
import type { Pool } from 'pg';

import { chooseBaseDir, findBinaries, type PgBinaries, prepareBaseDir, resolveRunAs } from './pg-binaries.js';
import { bringUp, destroyQuietly } from './pg-bring-up.js';
import {
  type DatabaseUrls,
  type NodeRole,
  nodeAt,
  NOOP,
  PgClusterError,
  type PgClusterInfo,
  type PgClusterOptions,
  pgUrl,
  SUPERUSER,
} from './pg-cluster.types.js';
import { signalPostmasterFamily, startWatchdog, stopNode } from './pg-process.js';
import { adminPool, closeAdminPools, waitForReplicaCatchUp, waitUntilConnectable } from './pg-replication.js';

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

  /** Ends this handle's admin connections without touching the servers. */
  async close(): Promise<void> {
    const pools = [...this.pools.values()];
    this.pools.clear();
    await closeAdminPools(pools);
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

  private requireReplica(): void {
    if (this.spec.replicaPort === undefined) {
      throw new PgClusterError('no-replica', 'this PgCluster was started without a replica');
    }
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
