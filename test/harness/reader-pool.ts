import type { Pool } from 'pg';
import type { DatabaseService } from '../../packages/read-path/src/database/database.service.js';

/**
 * The reader pool of a DatabaseService, for tests that drain or watch it. It is private to the
 * database layer (reads go through RoutedReader); only tests reach in.
 */
export function readerPoolOf(database: DatabaseService): Pool {
  const pool = (database as unknown as { readerPool: Pool | undefined }).readerPool;
  if (pool === undefined) throw new Error('this database layer has no reader pool');
  return pool;
}
