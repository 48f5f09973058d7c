/**
 * Readiness's dependency sample of the writer (relay.md §6.1): acquire plus `SELECT 1` on the
 * writer pool within a deadline, classified by the spec's outcome classes.
 */
import type { PoolClient } from 'pg';
import { DatabaseUnavailableError, PoolTimeoutError, QueryTimedOutError, toDatabaseError } from '@buzz-relay/read-path';
import type { DatabaseService } from '@buzz-relay/read-path';
import { ACQUIRE_TIMEOUT_MESSAGE } from '@buzz-relay/read-path/internal';

/** relay.md §6.1's outcome classes; `pool_full` is a PoolTimeout with every connection checked out. */
export type WriterCheck = 'success' | 'pool_full' | 'pool_timeout' | 'pool_error' | 'query_timeout' | 'query_error';

export const WRITER_CHECK_TIMEOUT_MS = 2000;

/**
 * `pool_full`: no connection by the deadline because every connection the pool may hold is
 * checked out (clients are being served); `pool_timeout` and `query_timeout`: no connection (a
 * dial still under way) or no answer by the deadline; `pool_error` and `query_error`: the dial or
 * the query failed. An acquire still waiting at the deadline is cancelled, so a sample never takes
 * a connection a client is queued for.
 */
export function checkWriter(db: DatabaseService, timeoutMs = WRITER_CHECK_TIMEOUT_MS): Promise<WriterCheck> {
  const abort = new AbortController();
  let acquired = false;
  const check = (async (): Promise<WriterCheck> => {
    let client: PoolClient;
    try {
      client = await db.acquireWriter('readiness', abort.signal);
    } catch (err) {
      return toDatabaseError(err) instanceof PoolTimeoutError ? 'pool_timeout' : 'pool_error';
    }
    acquired = true;
    try {
      await client.query('select 1');
      client.release();
      return 'success';
    } catch (err) {
      const typed = toDatabaseError(err);
      client.release(typed instanceof DatabaseUnavailableError ? typed : undefined);
      return typed instanceof QueryTimedOutError ? 'query_timeout' : 'query_error';
    }
  })();
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      if (acquired) return resolve('query_timeout');
      const pool = db.poolSamples().writer;
      resolve(pool.total >= pool.max && pool.idle === 0 ? 'pool_full' : 'pool_timeout');
      abort.abort(new PoolTimeoutError(ACQUIRE_TIMEOUT_MESSAGE));
    }, timeoutMs);
    timer.unref();
    void check.then((outcome) => {
      clearTimeout(timer);
      resolve(outcome);
    });
  });
}
