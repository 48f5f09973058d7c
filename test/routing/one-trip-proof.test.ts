/**
 * A proved replica read in one round trip (routing/reader-tx.ts openProvedReader): the request's
 * first statement leaves on the reader connection right behind BEGIN and the heartbeat read,
 * before the server has answered either, and its result is used only under a proof that held.
 * Watched on the real socket of the real replica: what the relay writes and when it first reads.
 */
import { performance } from 'node:perf_hooks';
import { sql, type Kysely } from 'kysely';
import type { Pool, PoolClient } from 'pg';
import type { DB } from '../../packages/read-path/src/database/database.types.js';
import { BOUNDED } from '../../packages/read-path/src/routing/route-predicate.js';
import { FenceProof } from '../harness/fence-proof.js';
import { readerPoolOf } from '../harness/reader-pool.js';
import { createTestDatabase, type TestDatabase } from '../harness/test-database.js';
import { adminPool, type DatabaseLayer, delta, routeDecisions, startDatabaseLayer, waitUntil } from './database-layer.js';

let db: TestDatabase;
let replicaAdmin: Pool;
let layer: DatabaseLayer;
let proof: FenceProof;
const FAR_WALL = Date.now() + 3600_000;

/** What crossed one reader connection's socket, in order: the statements written, and each read. */
type WireEvent = { readonly write: string } | { readonly read: number };
const wire = new WeakMap<PoolClient, WireEvent[]>();

function watch(client: PoolClient): void {
  if (wire.has(client)) return;
  const events: WireEvent[] = [];
  wire.set(client, events);
  const stream = (client as unknown as { connection: { stream: NodeJS.ReadWriteStream & { write: (chunk: unknown, ...rest: unknown[]) => boolean } } }).connection.stream;
  const write = stream.write.bind(stream);
  stream.write = (chunk: unknown, ...rest: unknown[]) => {
    events.push({ write: Buffer.isBuffer(chunk) ? chunk.toString('latin1') : String(chunk) });
    return write(chunk, ...rest);
  };
  stream.prependListener('data', (data: Buffer) => events.push({ read: data.length }));
}

beforeAll(async () => {
  db = await createTestDatabase();
  replicaAdmin = adminPool(db.readerUrl);
  layer = await startDatabaseLayer(db, { BUZZ_REPLICA_READ_MAX_AGE_MS: '2000', BUZZ_DB_READ_POOL_SIZE: '1' });
  await layer.fence.waitForBeats(1);
  await layer.fence.stopProbe();
  proof = await FenceProof.capture(layer.fence, db.readerUrl);
  proof.open(FAR_WALL);
  readerPoolOf(layer.database).on('acquire', watch);
}, 30_000);

afterAll(async () => {
  await layer?.close();
  await replicaAdmin?.end();
  await db?.drop();
}, 30_000);

/** Waits until the one reader connection is back in the pool (its ROLLBACK answered). */
async function settled(): Promise<void> {
  const pool = readerPoolOf(layer.database);
  await waitUntil('the reader connection back in the pool', () => pool.idleCount === pool.totalCount, 5000);
}

const MARK = 'one_trip_page';
const page = async (d: Kysely<DB>) => {
  const { rows } = await sql<{ standby: boolean }>`select pg_is_in_recovery() as standby, ${MARK}::text as mark`.execute(d);
  return rows[0].standby ? 'replica' : 'writer';
};

const isProof = (e: WireEvent) => 'write' in e && e.write.includes('BEGIN ISOLATION LEVEL REPEATABLE READ');

/** The events of the connection that served the last read, from its proof on. */
async function lastProofOnWire(): Promise<WireEvent[]> {
  const client = await readerPoolOf(layer.database).connect();
  client.release();
  const events = wire.get(client) ?? [];
  let begin = events.length - 1;
  while (begin >= 0 && !isProof(events[begin])) begin--;
  return begin < 0 ? [] : events.slice(begin);
}

describe('a proved replica read', () => {
  it('sends its page behind the proof, before the server answers anything', async () => {
    // The first read on a connection prepares the proof (a round trip of its own, once); the next is the steady state.
    expect(await layer.routed.read({ path: 'req_historical', predicate: BOUNDED }, page)).toBe('replica');
    await settled();
    expect(await layer.routed.read({ path: 'req_historical', predicate: BOUNDED }, page)).toBe('replica');
    await settled();

    const events = await lastProofOnWire();
    expect(events.length).toBeGreaterThan(0);
    const pageSent = events.findIndex((e) => 'write' in e && e.write.includes(MARK));
    const firstAnswer = events.findIndex((e) => 'read' in e);
    expect(pageSent).toBeGreaterThan(0);
    expect(firstAnswer).toBeGreaterThan(0);
    expect(pageSent).toBeLessThan(firstAnswer);
  });

  it('whose proof fails discards the page it sent ahead and serves the read from the writer', async () => {
    const { rows } = await replicaAdmin.query<{ token: string; epoch: string }>('select token::text, epoch::text from replica_heartbeat');
    layer.fence.ring.close();
    // The proof's token will be below every entry the ring keeps: reader_token_behind.
    layer.fence.ring.record(BigInt(rows[0].token) + 1_000n, rows[0].epoch, performance.now(), FAR_WALL);
    try {
      const ran: string[] = [];
      const r0 = await routeDecisions();
      const result = await layer.routed.read({ path: 'req_historical', predicate: BOUNDED }, async (d) => {
        const where = await page(d).catch(() => 'failed');
        ran.push(where);
        return where;
      });
      expect(result).toBe('writer');
      expect(delta(r0, await routeDecisions())).toEqual({ 'req_historical/writer/reader_token_behind': 1 });
      // The page went out ahead on the replica (answered or cut off with the dropped connection), then ran on the writer.
      expect(ran).toHaveLength(2);
      expect(ran[1]).toBe('writer');
      expect(ran[0]).not.toBe('writer');
    } finally {
      layer.fence.ring.close();
      proof.open(FAR_WALL);
    }
    // The dropped connection is replaced: the next read is proved and served by the replica again.
    expect(await layer.routed.read({ path: 'req_historical', predicate: BOUNDED }, page)).toBe('replica');
  });
});
