/**
 * Commit-time `created_at` floor guard (database.md §1.6, tests of §8.3). Each case runs on its
 * own client so the session GUC `buzz.created_at_floor` is exactly what the case says.
 */
import { randomBytes, randomUUID } from 'node:crypto';

import { jest } from '@jest/globals';
import pg from 'pg';

import { CREATED_AT_FLOOR_GUC, CREATED_AT_FLOOR_SECS } from '../../packages/read-path/src/database/constants.js';
import { EventWriteRepository } from '../../src/events/event-write.repository.js';
import { EventWriter } from '../../src/events/event-writer.service.js';
import { StoredEventInput } from '../../src/events/stored-event.js';
import { createTestDatabase, type TestDatabase } from '../harness/test-database.js';
import { type DatabaseLayer, startDatabaseLayer } from '../routing/database-layer.js';

const FLOOR_MESSAGE = 'below the replica-fence floor';
/** Comfortably older than the 960 s floor. */
const OLD_SECS = 2000;

describe('events created_at floor guard', () => {
  let tdb: TestDatabase;
  let communityId: string;
  const clients: pg.Client[] = [];

  /** A fresh session; `floor` undefined leaves the GUC unset (an unarmed session). */
  async function session(floor?: string): Promise<pg.Client> {
    const client = new pg.Client({ connectionString: tdb.writerUrl });
    client.on('error', () => undefined);
    await client.connect();
    clients.push(client);
    if (floor !== undefined) {
      await client.query(`SELECT set_config($1, $2, false)`, [CREATED_AT_FLOOR_GUC, floor]);
    }
    return client;
  }

  /** Inserts one event `ageSecs` before the transaction's now(); returns its id. */
  async function insertEvent(client: pg.Client, ageSecs: number, channelId: string | null): Promise<Buffer> {
    const id = randomBytes(32);
    await client.query(
      `INSERT INTO events (community_id, id, pubkey, created_at, kind, tags, content, sig, channel_id)
       VALUES ($1, $2, $3, now() - make_interval(secs => $4), 9, '[]', '', $5, $6)`,
      [communityId, id, randomBytes(32), ageSecs, randomBytes(64), channelId],
    );
    return id;
  }

  async function inTransaction<T>(client: pg.Client, work: () => Promise<T>): Promise<T> {
    await client.query('BEGIN');
    let result: T;
    try {
      result = await work();
    } catch (error) {
      await client.query('ROLLBACK');
      throw error;
    }
    await client.query('COMMIT');
    return result;
  }

  async function exists(id: Buffer): Promise<boolean> {
    const client = await session();
    const { rows } = await client.query('SELECT 1 FROM events WHERE community_id = $1 AND id = $2', [communityId, id]);
    return rows.length === 1;
  }

  beforeAll(async () => {
    tdb = await createTestDatabase();
    const client = await session();
    const { rows } = await client.query<{ id: string }>(
      `INSERT INTO communities (host) VALUES ($1) RETURNING id`,
      [`floor-${randomBytes(4).toString('hex')}.example`],
    );
    communityId = rows[0].id;
  });

  afterAll(async () => {
    await Promise.all(clients.map((c) => c.end().catch(() => undefined)));
    await tdb?.drop();
  });

  it('is armed at 960 seconds by the writer pool constant', () => {
    expect(CREATED_AT_FLOOR_SECS).toBe(960);
    expect(CREATED_AT_FLOOR_GUC).toBe('buzz.created_at_floor');
  });

  it('accepts an old channel row at INSERT and aborts it at COMMIT with 23514', async () => {
    const client = await session(String(CREATED_AT_FLOOR_SECS));
    await client.query('BEGIN');
    const id = await insertEvent(client, OLD_SECS, randomUUID()); // deferred: no error yet
    await expect(client.query('COMMIT')).rejects.toMatchObject({
      code: '23514',
      message: expect.stringContaining(FLOOR_MESSAGE),
    });
    expect(await exists(id)).toBe(false);
  });

  it('compares with clock_timestamp() at COMMIT, so holding the transaction open cannot outrun it', async () => {
    const client = await session(String(CREATED_AT_FLOOR_SECS));
    await client.query('BEGIN');
    // Inside the floor by one second at now() (transaction start) ...
    const id = await insertEvent(client, CREATED_AT_FLOOR_SECS - 1, randomUUID());
    // ... and below it by the time COMMIT runs.
    await client.query('SELECT pg_sleep(1.5)');
    await expect(client.query('COMMIT')).rejects.toMatchObject({ code: '23514' });
    expect(await exists(id)).toBe(false);
  });

  it('commits a fresh channel row', async () => {
    const client = await session(String(CREATED_AT_FLOOR_SECS));
    const id = await inTransaction(client, () => insertEvent(client, 0, randomUUID()));
    expect(await exists(id)).toBe(true);
  });

  it('exempts channel-NULL rows', async () => {
    const client = await session(String(CREATED_AT_FLOOR_SECS));
    const id = await inTransaction(client, () => insertEvent(client, OLD_SECS, null));
    expect(await exists(id)).toBe(true);
  });

  it.each([
    ['unset', undefined],
    ['blank', ''],
    ['whitespace', '  '],
    ['zero', '0'],
  ])('is inert when the GUC is %s', async (_label, floor) => {
    const client = await session(floor);
    const id = await inTransaction(client, () => insertEvent(client, OLD_SECS, randomUUID()));
    expect(await exists(id)).toBe(true);
  });

  it('fails closed on a malformed GUC', async () => {
    const client = await session('soon');
    await client.query('BEGIN');
    await insertEvent(client, 0, randomUUID());
    await expect(client.query('COMMIT')).rejects.toMatchObject({ code: '22023' });
  });

  it('raises at the statement under SET CONSTRAINTS ALL IMMEDIATE', async () => {
    const client = await session(String(CREATED_AT_FLOOR_SECS));
    await client.query('BEGIN');
    await client.query('SET CONSTRAINTS ALL IMMEDIATE');
    await expect(insertEvent(client, OLD_SECS, randomUUID())).rejects.toMatchObject({
      code: '23514',
      message: expect.stringContaining(FLOOR_MESSAGE),
    });
    await client.query('ROLLBACK');
  });

  it('blocks an UPDATE that moves created_at below the floor, within and across partitions', async () => {
    const client = await session(String(CREATED_AT_FLOOR_SECS));
    const id = await inTransaction(client, () => insertEvent(client, 0, randomUUID()));
    const rewrites = [
      `created_at = created_at - interval '${OLD_SECS} seconds'`,
      `created_at = timestamptz '2025-06-01 00:00:00+00'`, // lands in events_p_past
    ];
    for (const rewrite of rewrites) {
      await client.query('BEGIN');
      await client.query(`UPDATE events SET ${rewrite} WHERE community_id = $1 AND id = $2`, [communityId, id]);
      await expect(client.query('COMMIT')).rejects.toMatchObject({
        code: '23514',
        message: expect.stringContaining(FLOOR_MESSAGE),
      });
    }
    const { rows } = await client.query(
      `SELECT created_at > now() - interval '1 hour' AS fresh FROM events WHERE community_id = $1 AND id = $2`,
      [communityId, id],
    );
    expect(rows).toEqual([{ fresh: true }]);
  });

  it('blocks moving an old channel-NULL row into a channel', async () => {
    const client = await session(String(CREATED_AT_FLOOR_SECS));
    const id = await inTransaction(client, () => insertEvent(client, OLD_SECS, null));
    await client.query('BEGIN');
    await client.query('UPDATE events SET channel_id = $3 WHERE community_id = $1 AND id = $2', [communityId, id, randomUUID()]);
    await expect(client.query('COMMIT')).rejects.toMatchObject({ code: '23514' });
  });

  it('ignores updates that touch neither created_at nor channel_id (soft delete)', async () => {
    const unarmed = await session();
    const id = await inTransaction(unarmed, () => insertEvent(unarmed, OLD_SECS, randomUUID())); // a backfill: unarmed session
    const armed = await session(String(CREATED_AT_FLOOR_SECS));
    await inTransaction(armed, () =>
      armed.query('UPDATE events SET deleted_at = now() WHERE community_id = $1 AND id = $2', [communityId, id]),
    );
  });

  describe('through EventWriter on the armed writer pool, one statement in autocommit', () => {
    let layer: DatabaseLayer;
    let writer: EventWriter;
    let insertEvents: jest.SpiedFunction<EventWriteRepository['insertEvents']>;
    let lockFloorShared: jest.SpiedFunction<EventWriteRepository['lockFloorShared']>;

    beforeAll(async () => {
      layer = await startDatabaseLayer(tdb, {}, false);
      const repo = new EventWriteRepository();
      insertEvents = jest.spyOn(repo, 'insertEvents');
      lockFloorShared = jest.spyOn(repo, 'lockFloorShared');
      writer = new EventWriter(layer.database, repo, layer.metrics);
    }, 60_000);
    afterAll(() => layer?.close(), 30_000);
    beforeEach(() => jest.clearAllMocks());

    /** A channel event with nothing but its events row, `ageSecs` old: EventWriter stores it as one statement. */
    const item = (ageSecs: number): StoredEventInput => ({
      event: {
        id: randomBytes(32).toString('hex'),
        pubkey: randomBytes(32).toString('hex'),
        created_at: Math.floor(Date.now() / 1000) - ageSecs,
        kind: 40100,
        tags: [],
        content: '',
        sig: randomBytes(64).toString('hex'),
      },
      channelId: randomUUID(),
      dTag: null,
      thread: null,
      mentions: [],
    });
    const stored = (i: StoredEventInput) => exists(Buffer.from(i.event.id, 'hex'));

    it('refuses an old channel row with 23514 and stores a fresh one', async () => {
      const old = item(OLD_SECS);
      await expect(writer.write(communityId, old)).rejects.toMatchObject({
        code: '23514',
        message: expect.stringContaining(FLOOR_MESSAGE),
      });
      expect(await stored(old)).toBe(false);
      const fresh = item(0);
      await expect(writer.write(communityId, fresh)).resolves.toBe('stored');
      expect(await stored(fresh)).toBe(true);
      // Both went through the one statement that takes the floor lock, never the transaction path.
      expect(insertEvents.mock.calls.map((c) => c[3])).toEqual([{ lockFloor: true }, { lockFloor: true }]);
      expect(lockFloorShared).not.toHaveBeenCalled();
    });

    it('retries a refused grouped batch one event at a time: only the old row fails, its neighbours are stored', async () => {
      const batch = [item(0), item(OLD_SECS), item(0), item(0)];
      // Written in one turn, so they share one batch.
      const outcomes = await Promise.allSettled(batch.map((i) => writer.write(communityId, i)));
      expect(outcomes.map((o) => (o.status === 'fulfilled' ? o.value : (o.reason as { code?: string }).code))).toEqual(['stored', '23514', 'stored', 'stored']);
      expect(await Promise.all(batch.map(stored))).toEqual([true, false, true, true]);
      // The grouped statement first, then one per event.
      expect(insertEvents.mock.calls.map((c) => c[2].length)).toEqual([4, 1, 1, 1, 1]);
      expect(lockFloorShared).not.toHaveBeenCalled();
    });
  });

  it('is a deferred AFTER INSERT OR UPDATE row constraint trigger on events and every partition', async () => {
    const client = await session();
    const { rows } = await client.query<{ relname: string; ok: boolean }>(
      `SELECT c.relname,
              t.tgdeferrable AND t.tginitdeferred
              AND t.tgconstraint <> 0
              AND (t.tgtype & 1) = 1          -- ROW
              AND (t.tgtype & 2) = 0          -- not BEFORE
              AND (t.tgtype & 64) = 0         -- not INSTEAD OF
              AND (t.tgtype & 4) = 4          -- INSERT
              AND (t.tgtype & 16) = 16        -- UPDATE
              AND t.tgfoid = 'events_created_at_floor_guard()'::regprocedure AS ok
         FROM pg_partition_tree('events'::regclass) p
         JOIN pg_class c ON c.oid = p.relid
         LEFT JOIN pg_trigger t ON t.tgrelid = p.relid AND t.tgname = 'events_created_at_floor'`,
    );
    expect(rows.length).toBeGreaterThan(8);
    expect(rows.filter((r) => r.ok !== true)).toEqual([]);
    const columns = await client.query<{ attname: string }>(
      `SELECT a.attname FROM pg_trigger t
         JOIN pg_attribute a ON a.attrelid = t.tgrelid AND a.attnum = ANY(t.tgattr)
        WHERE t.tgrelid = 'events'::regclass AND t.tgname = 'events_created_at_floor'
        ORDER BY a.attname`,
    );
    expect(columns.rows.map((r) => r.attname)).toEqual(['channel_id', 'created_at']);
  });
});
