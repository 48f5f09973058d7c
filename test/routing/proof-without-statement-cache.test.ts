/**
 * With the statement cache off (BUZZ_DB_STATEMENT_CACHE_SIZE=0, for poolers that do not keep a
 * session's prepared statements), the replica proof sends its heartbeat read in full every time
 * and prepares nothing, and routed reads are still served by the proved replica session.
 */
import { sql } from 'kysely';
import { BOUNDED } from '../../packages/read-path/src/routing/route-predicate.js';
import { createTestDatabase, type TestDatabase } from '../harness/test-database.js';
import { DatabaseLayer, startDatabaseLayer } from './database-layer.js';

let db: TestDatabase;
let layer: DatabaseLayer;

beforeAll(async () => {
  db = await createTestDatabase();
  layer = await startDatabaseLayer(db, { BUZZ_REPLICA_READ_MAX_AGE_MS: '2000', BUZZ_DB_STATEMENT_CACHE_SIZE: '0' });
  await layer.fence.waitForBeats(1);
}, 30_000);

afterAll(async () => {
  await layer?.close();
  await db?.drop();
}, 30_000);

it('proves the replica session without a prepared statement', async () => {
  for (const genericPlan of [false, true]) {
    const row = await layer.routed.read({ path: 'req_historical', predicate: BOUNDED, genericPlan }, async (d) => {
      const { rows } = await sql<{ standby: boolean; prepared: number; mode: string }>`
        select pg_is_in_recovery() as standby, (select count(*)::int from pg_prepared_statements) as prepared,
               current_setting('plan_cache_mode') as mode`.execute(d);
      return rows[0];
    });
    expect(row).toEqual({ standby: true, prepared: 0, mode: genericPlan ? 'force_generic_plan' : 'auto' });
  }
});
