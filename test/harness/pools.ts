import type { Pool } from 'pg';
import type { DatabaseService } from '../../packages/read-path/src/database/database.service.js';

/**
 * The pools of a DatabaseService, for tests that hold, drain or watch their connections. They are
 * private to the database layer (writes and the relay's own reads check out through
 * acquireWriter/withWriter, replica reads through RoutedReader); only tests reach in.
 */
export function writerPoolOf(database: DatabaseService): Pool {
  return (database as unknown as { writerPool: Pool }).writerPool;
}

export function readerPoolOf(database: DatabaseService): Pool {
  const pool = (database as unknown as { reader: { pool: Pool | undefined } }).reader.pool;
  if (pool === undefined) throw new Error('this database layer has no reader pool');
  return pool;
}

/**
 * §3.3 / seed 000's "saturated" reader: every connection the reader may hold exists and none is
 * idle. Routing does not decide by it (a dial in flight counts as a connection; see
 * ReaderPool.dialsFailing); the admission tests assert the pool state by that name.
 */
export function readerSaturated(database: DatabaseService): boolean {
  const reader = database.poolSamples().reader;
  return reader !== undefined && reader.total >= reader.max && reader.idle === 0;
}
