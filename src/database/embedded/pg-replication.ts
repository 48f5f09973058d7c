/**
 * Replication waits and admin connections. Replication is asynchronous: callers wait with
 * waitForReplicaCatchUp(), which compares LSNs. The test harness also uses these waits directly
 * against external servers.
 */
import { Client, Pool, type QueryConfig } from 'pg';

import { delay, NOOP, PgClusterError } from './pg-cluster.types.js';

const ADMIN_QUERY_TIMEOUT_MS = 5000;

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

export function adminPool(url: string, onIdleError: (err: Error) => void): Pool {
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

/** Ends admin pools; pool.end() never resolves against a frozen server, so the wait is bounded. */
export async function closeAdminPools(pools: Pool[]): Promise<void> {
  await Promise.all(pools.map((pool) => Promise.race([pool.end().catch(NOOP), delay(1000, { unref: true })])));
}

function redactUrl(url: string): string {
  return url.replace(/\/\/([^:@/]+):[^@/]*@/, '//$1:***@');
}

