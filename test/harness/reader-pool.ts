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

/**
 * §3.3 / seed 000's "saturated" reader: every connection the reader may hold exists and none is
 * idle. Routing does not decide by it (a dial in flight counts as a connection; see
 * DatabaseService.readerDialsFailing); the admission tests assert the pool state by that name.
 */
export function readerSaturated(database: DatabaseService): boolean {
  const reader = database.poolSamples().reader;
  return reader !== undefined && reader.total >= reader.max && reader.idle === 0;
}
