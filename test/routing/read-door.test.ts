/**
 * RoutedReader as the one door for replica reads (issue 19, items 2 and 3), on the real pair:
 * a released read session refuses further use (its own run() and any handle kept from it), `await
 * using` releases the permit and the connection, route path labels form a closed, registered set,
 * and real database faults leave the door as typed errors that the one HTTP filter and the one
 * WebSocket mapper answer with the wire strings of database.md §2.8.
 */
import { Logger } from '@nestjs/common';
import { Kysely, sql } from 'kysely';
import { Pool, PoolClient } from 'pg';
import { databaseErrorAnswer } from '../../packages/read-path/src/database/database-error.filter.js';
import { DatabaseUnavailableError, HistoryReadRejectedError, QueryTimedOutError } from '../../packages/read-path/src/database/database-errors.js';
import type { DB } from '../../packages/read-path/src/database/database.types.js';
import { HistoryReadGate } from '../../packages/read-path/src/history-reads/history-read-gate.js';
import { ReadAfterReleaseError } from '../../packages/read-path/src/routing/reader-tx.js';
import { RoutePaths, UnknownRoutePathError } from '../../packages/read-path/src/routing/route-paths.js';
import { BOUNDED } from '../../packages/read-path/src/routing/route-predicate.js';
import { closedReason } from '../../src/subscriptions/ws-reasons.js';
import { FenceProof } from '../harness/fence-proof.js';
import { readerPoolOf } from '../harness/pools.js';
import { createTestDatabase, faultSupport, type TestDatabase } from '../harness/test-database.js';
import { adminPool, DatabaseLayer, delta, routeDecisions, startDatabaseLayer, waitUntil } from './database-layer.js';
import { countRows, insertRow, newCommunity } from './fixtures.js';

let db: TestDatabase;
let admin: Pool;
let layer: DatabaseLayer;
let proof: FenceProof;
let community: string;
const FAR_WALL = Date.now() + 3600_000;

beforeAll(async () => {
  Logger.overrideLogger(false);
  db = await createTestDatabase();
  admin = adminPool(db.writerUrl);
  community = await newCommunity(admin);
  await insertRow(admin, community, { createdAtSecs: Math.floor(Date.now() / 1000) - 100, content: 'door' });
  await db.waitForReplica();
  layer = await startDatabaseLayer(db, { BUZZ_REPLICA_READ_MAX_AGE_MS: '2000', BUZZ_DB_READ_POOL_SIZE: '2' });
  await layer.fence.waitForBeats(1);
  await layer.fence.stopProbe();
  proof = await FenceProof.capture(layer.fence, db.readerUrl);
}, 30_000);

afterAll(async () => {
  await layer?.close();
  await admin?.end();
  await db?.drop();
  Logger.overrideLogger(['log', 'error', 'warn']);
}, 30_000);

/** The reader pool has every connection back (the release check's ROLLBACK done). */
const readerIdle = () => {
  const pool = readerPoolOf(layer.database);
  return pool.idleCount === pool.totalCount;
};

const standby = async (d: Kysely<DB>) => (await sql<{ standby: boolean }>`select pg_is_in_recovery() as standby`.execute(d)).rows[0].standby;

describe('route path labels: registered at set-up, closed at the first routed read', () => {
  // First in the file: no routed read has run yet on this layer.
  it('an importer label registered before use is recorded; later registrations and unknown labels are refused', async () => {
    const paths = layer.app.get(RoutePaths);
    paths.register('reports_daily', 'reports_daily');
    expect(() => paths.register('Reports Daily')).toThrow(/not lower snake case/);
    proof.open(FAR_WALL);
    const r0 = await routeDecisions();
    expect(await layer.routed.read({ path: 'reports_daily', predicate: BOUNDED }, standby)).toBe(true);
    expect(delta(r0, await routeDecisions())).toEqual({ 'reports_daily/replica/fresh': 1 });

    expect(() => paths.register('reports_late')).toThrow(/after the first routed read/);
    paths.register('req_historical'); // already known: a no-op, even now
    const r1 = await routeDecisions();
    await expect(layer.routed.read({ path: 'reports_late', predicate: BOUNDED }, standby)).rejects.toThrow(UnknownRoutePathError);
    await expect(layer.routed.session({ path: 'no_such_path', predicate: BOUNDED }, standby)).rejects.toThrow(/unknown route path label "no_such_path"/);
    expect(delta(r1, await routeDecisions())).toEqual({});
  });
});

describe('a released read session refuses use', () => {
  it('its run() and a handle kept from it are refused after release, even once the connection serves another session', async () => {
    proof.open(FAR_WALL);
    const { page, session } = await layer.routed.session({ path: 'bridge_query', predicate: BOUNDED }, (d) => countRows(d, community));
    expect(session.isReplica()).toBe(true);
    let kept: Kysely<DB> | undefined;
    expect(await session.run(async (d) => ((kept = d), countRows(d, community)))).toBe(page);
    session.release();
    await waitUntil('the reader connection back in the pool', readerIdle, 5000);

    const r0 = await routeDecisions();
    await expect(session.run((d) => countRows(d, community))).rejects.toThrow(ReadAfterReleaseError);
    await expect(countRows(kept!, community)).rejects.toThrow(ReadAfterReleaseError);
    // The refusal ran nothing anywhere: no decision, and in particular no quiet writer read.
    expect(delta(r0, await routeDecisions())).toEqual({});

    // The connection now holds another session's transaction: the kept handle still cannot reach it.
    proof.open(FAR_WALL);
    const next = await layer.routed.session({ path: 'bridge_query', predicate: BOUNDED }, (d) => countRows(d, community));
    try {
      expect(next.session.isReplica()).toBe(true);
      await expect(sql`select 1`.execute(kept!)).rejects.toThrow(/used after it was released/);
      expect(await next.session.run((d) => countRows(d, community))).toBe(page);
    } finally {
      next.session.release();
    }
  });

  it('`await using` releases the history permit and returns the reader connection when the block ends', async () => {
    const gate = layer.app.get(HistoryReadGate);
    await waitUntil('the reader connections idle', readerIdle, 5000);
    proof.open(FAR_WALL);
    let inside = -1;
    {
      await using held = (await layer.routed.session({ path: 'req_historical', predicate: BOUNDED }, (d) => countRows(d, community))).session;
      expect(held.isReplica()).toBe(true);
      inside = gate.inUse;
      expect(readerIdle()).toBe(false);
    }
    expect(inside).toBe(1);
    expect(gate.inUse).toBe(0);
    // asyncDispose resolves once the ROLLBACK is done and the connection is idle again.
    expect(readerIdle()).toBe(true);
  });
});

describe('real faults leave the door typed; the one filter and the one WS mapper answer them', () => {
  it('a replica statement that hits its deadline: QueryTimedOutError, 503 query timed out, CLOSED error: query timed out', async () => {
    proof.open(FAR_WALL);
    const r0 = await routeDecisions();
    const err = await layer.routed
      .read({ path: 'req_historical', predicate: BOUNDED }, async (d) => {
        await sql`select set_config('statement_timeout', '50', true)`.execute(d);
        return sql`select pg_sleep(2)`.execute(d);
      })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(QueryTimedOutError);
    expect((err as QueryTimedOutError).code).toBe('57014');
    expect(delta(r0, await routeDecisions())).toEqual({ 'req_historical/replica/statement_cancelled': 1 });
    expect(databaseErrorAnswer(err)).toEqual({ status: 503, body: { error: 'query timed out' } });
    expect(closedReason(err).wire).toBe('error: query timed out');
  });

  it('a saturated reader: HistoryReadRejectedError, 503 database unavailable, CLOSED error: database error', async () => {
    await waitUntil('the reader connections idle', readerIdle, 5000);
    const pool = readerPoolOf(layer.database);
    const held: PoolClient[] = [];
    try {
      // Take every reader connection (the pool has two): the pool is saturated, its dials fine.
      for (let i = 0; i < 2; i++) held.push(await pool.connect());
      proof.open(FAR_WALL);
      const r0 = await routeDecisions();
      const err = await layer.routed.read({ path: 'req_historical', predicate: BOUNDED }, standby).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(HistoryReadRejectedError);
      expect((err as HistoryReadRejectedError).reason).toBe('reader_acquire_timeout');
      expect(delta(r0, await routeDecisions())).toEqual({ 'req_historical/rejected/reader_acquire_timeout': 1 });
      expect(databaseErrorAnswer(err)).toEqual({ status: 503, body: { error: 'database unavailable' }, retryAfterSecs: 1 });
      expect(closedReason(err).wire).toBe('error: database error');
    } finally {
      for (const c of held) c.release();
    }
  });

  (faultSupport().supported ? it : it.skip)('a stopped replica: the reader checkout fails as DatabaseUnavailableError, 503 database unavailable', async () => {
    await db.cluster.stopReplica();
    try {
      const pool = readerPoolOf(layer.database);
      await waitUntil('the idle reader connections closed', async () => {
        // Idle connections to a stopped server are dropped by the pool once they error.
        return pool.idleCount === 0;
      }, 10_000);
      const err = await layer.readers.acquire('maintenance').then(
        (c) => (c.release(), 'connected'),
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(DatabaseUnavailableError);
      expect(databaseErrorAnswer(err)).toEqual({ status: 503, body: { error: 'database unavailable' }, retryAfterSecs: 1 });
      expect(closedReason(err).wire).toBe('error: database error');
    } finally {
      await db.cluster.heal();
      await db.waitForReplica(20_000);
    }
  }, 40_000);
});
