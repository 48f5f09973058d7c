/**
 * Real faults on a PgCluster's streaming replica, for the fault tests (through `db.cluster`, see
 * test-database.ts) and the soak bench. It acts on the servers a PgCluster handle names, so it
 * works on the pair the jest globalSetup started in another process (PgCluster.attach).
 *
 * Imports only node, pg and src/ (no jest): the bench build compiles it into dist/test/harness.
 */
import type { Pool } from 'pg';

import type { PgCluster } from '../../src/database/embedded/pg-cluster.js';
import { nodeAt, PgClusterError, type PgNode } from '../../src/database/embedded/pg-cluster.types.js';
import { runningPort, signalPostmasterFamily, startNode, stopNode } from '../../src/database/embedded/pg-process.js';
import { adminPool, closeAdminPools } from '../../src/database/embedded/pg-replication.js';

export class ReplicaFaults {
  private replicaPool: Pool | undefined;

  constructor(private readonly cluster: PgCluster) {}

  /** Fast shutdown of the replica (its pooled connections get 57P01, new ones ECONNREFUSED). */
  async stopReplica(): Promise<void> {
    const node = this.requireReplica();
    await this.thawReplica();
    const { binDir, runAs } = this.cluster.info;
    await stopNode(binDir, runAs, node, 'fast');
  }

  async startReplica(): Promise<void> {
    const node = this.requireReplica();
    if ((await runningPort(node)) !== undefined) return;
    const { binDir, runAs } = this.cluster.info;
    await startNode(binDir, runAs, node);
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
    await this.pool().query('select pg_wal_replay_pause()');
  }

  async resumeReplay(): Promise<void> {
    this.requireReplica();
    await this.pool().query('select pg_wal_replay_resume()');
  }

  /** Undo any fault: thaw, start if stopped, resume replay. Safe to call at any time. */
  async heal(): Promise<void> {
    if (this.cluster.replicaPort === undefined) return;
    await this.thawReplica();
    await this.startReplica();
    await this.resumeReplay();
  }

  /** Ends the replay-control connection without touching the servers. */
  async close(): Promise<void> {
    const pool = this.replicaPool;
    this.replicaPool = undefined;
    if (pool) await closeAdminPools([pool]);
  }

  private requireReplica(): PgNode {
    if (this.cluster.replicaPort === undefined) {
      throw new PgClusterError('no-replica', 'this PgCluster was started without a replica');
    }
    return nodeAt(this.cluster.baseDir, 'replica');
  }

  private pool(): Pool {
    this.replicaPool ??= adminPool(this.cluster.readerUrl as string, () => undefined);
    return this.replicaPool;
  }
}
