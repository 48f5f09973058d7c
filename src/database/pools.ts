/**
 * Pool construction. Every serving writer pool is built by createWriterPool and
 * runs the one after-connect hook; the reader pool is lazy and has no hook.
 */
import { ClientBase, Pool, PoolConfig } from 'pg';
import { DatabaseConfig } from '../config/app-config.js';
import { CREATED_AT_FLOOR_SECS } from './constants.js';

export const WRITER_POOL_MIN = 2;
export const WRITER_ACQUIRE_TIMEOUT_MS = 3000;
export const POOL_MAX_LIFETIME_SECS = 1800;
export const POOL_IDLE_TIMEOUT_MS = 600_000;
export const READER_ACQUIRE_TIMEOUT_MS = 150;

export type PoolErrorSink = (role: string, err: Error) => void;

/**
 * The writer's after-connect hook, in the spec's order: arm the floor guard,
 * install the session timeouts, then refuse any isolation level but READ COMMITTED.
 */
export async function prepareWriterSession(client: ClientBase, cfg: DatabaseConfig): Promise<void> {
  await client.query(`select set_config('buzz.created_at_floor', $1, false)`, [String(CREATED_AT_FLOOR_SECS)]);
  await client.query(
    `select set_config('lock_timeout', $1, false),
            set_config('idle_in_transaction_session_timeout', $2, false),
            set_config('statement_timeout', $3, false)`,
    [String(cfg.lockTimeoutMs), String(cfg.idleTxnTimeoutMs), String(cfg.statementTimeoutMs)],
  );
  const { rows } = await client.query<{ iso: string }>(`select current_setting('transaction_isolation') as iso`);
  if (rows[0]?.iso !== 'read committed') {
    throw new Error(`buzz-relay requires READ COMMITTED as the default isolation, server has ${rows[0]?.iso}`);
  }
}

export function createWriterPool(cfg: DatabaseConfig, url: string, onError: PoolErrorSink): Pool {
  const options: PoolConfig = {
    connectionString: url,
    application_name: 'buzz-relay',
    max: cfg.poolSize,
    min: Math.min(WRITER_POOL_MIN, cfg.poolSize),
    connectionTimeoutMillis: WRITER_ACQUIRE_TIMEOUT_MS,
    idleTimeoutMillis: POOL_IDLE_TIMEOUT_MS,
    maxLifetimeSeconds: POOL_MAX_LIFETIME_SECS,
    onConnect: (client) => prepareWriterSession(client, cfg),
  };
  return withErrorListener(new Pool(options), 'writer', onError);
}

export function createReaderPool(cfg: DatabaseConfig, url: string, onError: PoolErrorSink): Pool {
  const pool = new Pool({
    connectionString: url,
    application_name: 'buzz-relay-reader',
    max: cfg.readPoolSize,
    min: 0,
    connectionTimeoutMillis: READER_ACQUIRE_TIMEOUT_MS,
    idleTimeoutMillis: POOL_IDLE_TIMEOUT_MS,
    maxLifetimeSeconds: POOL_MAX_LIFETIME_SECS,
  });
  return withErrorListener(pool, 'reader', onError);
}

/** A pool without an 'error' listener crashes the process when its server restarts. */
function withErrorListener(pool: Pool, role: string, onError: PoolErrorSink): Pool {
  pool.on('error', (err) => onError(role, err));
  return pool;
}

/** pool.end() never resolves against a frozen server; give up after a bound. */
export async function endPool(pool: Pool, timeoutMs = 5000): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), timeoutMs);
    timer.unref();
  });
  const ended = pool.end().then(
    () => true,
    () => true,
  );
  const result = await Promise.race([ended, timedOut]);
  clearTimeout(timer);
  return result;
}
