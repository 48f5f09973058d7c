/**
 * The replica-fence probe's own pool (seed 001): lazy, one connection, the writer's URL and
 * lifetime (so it follows a writer failover), its own session timeouts set at connect time.
 * It costs one extra writer connection per process that runs a probe and never borrows a serving
 * one. It is the deliberate exception to the writer rule of database/pools.ts: it never writes
 * `events`, so it needs no floor-guard arming, and it installs tighter session timeouts instead.
 */
import { Pool } from 'pg';
import { CallbackQueryClient } from '../database/callback-query-client.js';
import { PoolErrorSink, POOL_IDLE_TIMEOUT_MS, POOL_MAX_LIFETIME_SECS, withErrorListener } from '../database/pools.js';
import {
  PROBE_ACQUIRE_TIMEOUT_MS,
  PROBE_APPLICATION_NAME,
  PROBE_IDLE_IN_TXN_TIMEOUT_MS,
  PROBE_LOCK_TIMEOUT_MS,
  PROBE_STATEMENT_TIMEOUT_MS,
} from './replica-fence.constants.js';

export function createProbePool(writerUrl: string, onError: PoolErrorSink): Pool {
  const timeouts = [
    `-c lock_timeout=${PROBE_LOCK_TIMEOUT_MS}`,
    `-c statement_timeout=${PROBE_STATEMENT_TIMEOUT_MS}`,
    `-c idle_in_transaction_session_timeout=${PROBE_IDLE_IN_TXN_TIMEOUT_MS}`,
  ].join(' ');
  const pool = new Pool({
    connectionString: writerUrl,
    application_name: PROBE_APPLICATION_NAME,
    max: 1,
    min: 0,
    connectionTimeoutMillis: PROBE_ACQUIRE_TIMEOUT_MS,
    idleTimeoutMillis: POOL_IDLE_TIMEOUT_MS,
    maxLifetimeSeconds: POOL_MAX_LIFETIME_SECS,
    options: timeouts,
    Client: CallbackQueryClient,
  });
  return withErrorListener(pool, 'fence_probe', onError);
}
