/**
 * The replica-fence probe on the real writer + streaming replica (database.md §4, §8.4, seed 001).
 */
import { randomBytes } from 'node:crypto';
import { AddressInfo, connect, createServer, Socket } from 'node:net';
import { jest } from '@jest/globals';
import { Logger } from '@nestjs/common';
import { trace } from '@opentelemetry/api';
import { sql } from 'kysely';
import { Pool } from 'pg';
import { REPLICA_FLOOR_LOCK_KEY } from '../../packages/read-path/src/database/constants.js';
import { endPool } from '../../packages/read-path/src/database/pools.js';
import { createProbePool } from '../../packages/read-path/src/replica-fence/probe-pool.js';
import { DatabaseMetrics } from '../../packages/read-path/src/metrics/database-metrics.service.js';
import { ProbeError, probeOnce } from '../../packages/read-path/src/replica-fence/fence-probe.js';
import { BOUNDED } from '../../packages/read-path/src/routing/route-predicate.js';
import { PROBE_APPLICATION_NAME, PROBE_DEADLINE_MS } from '../../packages/read-path/src/replica-fence/replica-fence.constants.js';
import { createTestDatabase, type TestDatabase } from '../harness/test-database.js';
import { adminPool, DatabaseLayer, metricValue, startDatabaseLayer } from '../routing/database-layer.js';
import { writerPoolOf } from '../harness/pools.js';

let db: TestDatabase;
let admin: Pool;

beforeAll(async () => {
  db = await createTestDatabase();
  admin = adminPool(db.writerUrl);
}, 30_000);

afterAll(async () => {
  await admin?.end();
  await db?.drop();
}, 30_000);

async function probeSessions(): Promise<number> {
  const { rows } = await admin.query<{ n: number }>(
    `select count(*)::int as n from pg_stat_activity where application_name = $1 and datname = current_database()`,
    [PROBE_APPLICATION_NAME],
  );
  return rows[0].n;
}

describe('fence probe loop', () => {
  let layer: DatabaseLayer;
  beforeAll(async () => {
    layer = await startDatabaseLayer(db, { BUZZ_REPLICA_READ_MAX_AGE_MS: '2000', BUZZ_DB_POOL_SIZE: '1' });
  }, 30_000);
  afterAll(() => layer?.close(), 30_000);

  it('starts after a verified floor guard and commits strictly increasing tokens in one epoch', async () => {
    expect(layer.fence.getState()).toBe('running');
    await layer.fence.waitForBeats(3);
    const { rows } = await admin.query<{ token: string; epoch: string }>('select token::text, epoch::text from replica_heartbeat');
    const newest = layer.fence.ring.newest()!;
    expect(BigInt(rows[0].token)).toBeGreaterThanOrEqual(newest.token);
    expect(layer.fence.ring.currentEpoch()).toBe(rows[0].epoch);
    expect(layer.fence.ring.size()).toBeGreaterThanOrEqual(3);
    // The wall trails the writer clock by at least the 960 s floor plus the 5 s margin.
    expect(Date.now() - newest.fenceWall).toBeGreaterThanOrEqual(965_000);
  });

  it('fence_probe_beats_while_serving_writer_pool_is_exhausted (two fresh beats, exactly one probe session)', async () => {
    expect(writerPoolOf(layer.database).options.max).toBe(1);
    const held = await writerPoolOf(layer.database).connect();
    try {
      // The serving pool's only connection is held: a probe on it would wait out the 3 s acquire timeout.
      await expect(writerPoolOf(layer.database).connect()).rejects.toThrow(/timeout/);
      await layer.fence.waitForBeats(2, 3000);
      expect(layer.fence.ring.heartbeatAgeMs()!).toBeLessThan(1000);
      expect(await probeSessions()).toBe(1);
    } finally {
      held.release();
    }
  }, 20_000);

  it('sees an open writer transaction: the wall is bounded by its xact_start', async () => {
    const client = await admin.connect();
    try {
      await client.query('BEGIN');
      const { rows } = await client.query<{ started: Date }>('select now() as started');
      await layer.fence.waitForBeats(1);
      const wall = layer.fence.ring.newest()!.fenceWall;
      expect(wall).toBeLessThanOrEqual(rows[0].started.getTime() - 965_000);
    } finally {
      await client.query('ROLLBACK');
      client.release();
    }
  });
});

describe('probe failure handling (loop stopped; beats driven by hand)', () => {
  let layer: DatabaseLayer;
  beforeAll(async () => {
    layer = await startDatabaseLayer(db, { BUZZ_REPLICA_READ_MAX_AGE_MS: '2000' });
    await layer.fence.waitForBeats(1);
    await layer.fence.stopProbe();
  }, 30_000);
  afterAll(() => layer?.close(), 30_000);

  it('cluster_global_probe_pool_bounds_the_floor_lock_wait: lock_timeout, proof retained, next beat succeeds; both log lines carry seed 001 field names', async () => {
    const warn = jest.spyOn(Logger.prototype, 'warn');
    const info = jest.spyOn(Logger.prototype, 'log');
    try {
      const retained = layer.fence.ring.newest()!;
      const holder = await admin.connect();
      await holder.query('BEGIN');
      await holder.query('select pg_advisory_xact_lock_shared($1::bigint)', [REPLICA_FLOOR_LOCK_KEY.toString()]);
      const failed = await layer.fence.step();
      await holder.query('COMMIT');
      holder.release();
      expect(failed).toBeInstanceOf(ProbeError);
      expect((failed as ProbeError).kind).toBe('lock_timeout');
      expect(layer.fence.ring.newest()).toBe(retained);
      const ok = await layer.fence.step();
      expect(ok).not.toBeInstanceOf(ProbeError);
      expect(layer.fence.ring.newest()!.token).toBeGreaterThan(retained.token);

      const failure = warn.mock.calls.find((c) => c[1] === 'replica fence probe failed')?.[0] as Record<string, unknown>;
      expect(failure).toMatchObject({ error_kind: 'lock_timeout', consecutive_failures: 1 });
      expect(typeof failure.heartbeat_age_ms).toBe('number');
      expect(typeof failure.acquire_ms).toBe('number');
      expect(typeof failure.lock_ms).toBe('number');
      expect(typeof failure.beat_gap_ms).toBe('number');
      expect(Object.keys(failure).filter((k) => /[A-Z]/.test(k))).toEqual([]);
      const recovery = info.mock.calls.find((c) => c[1] === 'replica fence probe recovered')?.[0];
      expect(recovery).toMatchObject({ consecutive_failures: 1, token: expect.stringMatching(/^\d+$/) });
    } finally {
      warn.mockRestore();
      info.mockRestore();
    }
  }, 20_000);

  it('sample_writer_waits_for_shared_floor_lock_before_sampling_time', async () => {
    const holder = await admin.connect();
    await holder.query('BEGIN');
    await holder.query('select pg_advisory_xact_lock_shared($1::bigint)', [REPLICA_FLOOR_LOCK_KEY.toString()]);
    const beat = layer.fence.step();
    await new Promise((r) => setTimeout(r, 300)); // the lock wait being measured, not a synchronisation
    const { rows } = await holder.query<{ marker: Date }>('select clock_timestamp() as marker');
    await holder.query('COMMIT');
    holder.release();
    const sample = await beat;
    expect(sample).not.toBeInstanceOf(ProbeError);
    // S was sampled after the shared holder committed (so after its last statement). The wall
    // itself may sit lower: the activity scan can still see the holder finishing its commit,
    // and counting its xact_start only makes the wall more conservative.
    const { sampledAt, fenceWall } = sample as { sampledAt: number; fenceWall: number };
    expect(sampledAt).toBeGreaterThanOrEqual(rows[0].marker.getTime());
    expect(fenceWall).toBeLessThanOrEqual(sampledAt - 965_000);
  });

  it('cluster_global_probe_rotates_epoch_on_same_epoch_token_regression (through the probe pool)', async () => {
    const before = layer.fence.ring.currentEpoch();
    await admin.query('update replica_heartbeat set token = 0 where id = 1');
    const sample = await layer.fence.step();
    expect(sample).not.toBeInstanceOf(ProbeError);
    const { rows } = await admin.query<{ epoch: string }>('select epoch::text from replica_heartbeat');
    expect(rows[0].epoch).not.toBe(before);
    expect(layer.fence.ring.currentEpoch()).toBe(rows[0].epoch);
    expect(layer.fence.ring.size()).toBe(1);
  });
});

describe('floor guard verification gates the probe', () => {
  it.each([
    ['a dropped trigger', 'drop trigger events_created_at_floor on events', /missing or mis-shaped on: .*events/],
    [
      'a gutted guard function',
      `create or replace function events_created_at_floor_guard() returns trigger language plpgsql as $$ begin return null; end $$`,
      /floor guard is inert/,
    ],
  ])('fence_probe_refuses_to_start_without_verified_floor_guard: %s', async (_name, ddl, message) => {
    const broken = await createTestDatabase();
    const pool = adminPool(broken.writerUrl);
    try {
      await pool.query(ddl);
      const layer = await startDatabaseLayer(broken, { BUZZ_REPLICA_READ_MAX_AGE_MS: '2000' });
      try {
        expect(layer.fence.getState()).toBe('unverified');
        await expect(layer.fence.verifyFloorGuard()).rejects.toThrow(message);
        expect(layer.fence.ring.newest()).toBeUndefined();
        expect(layer.fence.beatCount()).toBe(0);
      } finally {
        await layer.close();
      }
    } finally {
      await pool.end();
      await broken.drop();
    }
  }, 20_000);

  it('no reader pool: no probe, no probe session', async () => {
    const layer = await startDatabaseLayer(db, {}, false);
    try {
      expect(layer.fence.getState()).toBe('disabled');
    } finally {
      await layer.close();
    }
  });
});

describe('probeOnce edge cases', () => {
  const metrics = new DatabaseMetrics();
  const span = () => trace.getTracer('fence-probe-test').startSpan('replica_fence_probe');

  it('cluster_global_sample_writer_fails_closed_when_activity_is_masked (role without pg_monitor)', async () => {
    const role = `fence_unpriv_${randomBytes(4).toString('hex')}`;
    await admin.query(`create role ${role} login`);
    await admin.query(`grant select, update on replica_heartbeat to ${role}`);
    const url = new URL(db.writerUrl);
    url.username = role;
    const pool = createProbePool(url.toString(), () => undefined);
    const other = await admin.connect(); // a session of another role the unprivileged view cannot see into
    try {
      await other.query('BEGIN');
      await other.query('select 1');
      const err = await probeOnce(pool, metrics, span()).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ProbeError);
      expect((err as ProbeError).kind).toBe('masked_activity');
      expect((err as ProbeError).message).toMatch(/pg_monitor/);
    } finally {
      await other.query('ROLLBACK');
      other.release();
      await endPool(pool);
      await admin.query(`revoke all on replica_heartbeat from ${role}`);
      await admin.query(`drop role ${role}`);
    }
  });

  it('the 5 s client deadline ends a beat stalled where no server timeout can fire', async () => {
    const target = new URL(db.writerUrl);
    const proxy = await stallableProxy(Number(target.port));
    target.port = String(proxy.port);
    const pool = createProbePool(target.toString(), () => undefined);
    try {
      const ok = await probeOnce(pool, metrics, span());
      expect(ok.token).toBeGreaterThan(0n);
      proxy.stall(); // the warm connection now swallows every byte: the server never sees BEGIN
      const started = Date.now();
      const err = await probeOnce(pool, metrics, span()).catch((e: unknown) => e);
      const waited = Date.now() - started;
      expect((err as ProbeError).kind).toBe('deadline');
      expect(waited).toBeGreaterThanOrEqual(PROBE_DEADLINE_MS - 100);
      expect(waited).toBeLessThan(PROBE_DEADLINE_MS + 2000);
    } finally {
      await endPool(pool, 500);
      proxy.close();
    }
  }, 20_000);
});

/** A TCP forwarder that can stop forwarding (without closing) to simulate a stalled socket. */
function stallableProxy(targetPort: number): Promise<{ port: number; stall(): void; close(): void }> {
  let stalled = false;
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(targetPort, '127.0.0.1');
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => undefined);
    }
    client.on('data', (d) => {
      if (!stalled) upstream.write(d);
    });
    upstream.on('data', (d) => {
      if (!stalled) client.write(d);
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({
        port: (server.address() as AddressInfo).port,
        stall: () => (stalled = true),
        close: () => {
          for (const s of sockets) s.destroy();
          server.close();
        },
      }),
    ),
  );
}

describe('lazy reader pool', () => {
  it('lazy_reader_pool_still_spawns_fence_probe; reads against an unreachable reader fall back to the writer', async () => {
    const closed = await new Promise<number>((resolve) => {
      const s = createServer();
      s.listen(0, '127.0.0.1', () => {
        const port = (s.address() as AddressInfo).port;
        s.close(() => resolve(port));
      });
    });
    const layer = await startDatabaseLayer(db, {
      READ_DATABASE_URL: `postgres://postgres@127.0.0.1:${closed}/nowhere`,
      BUZZ_REPLICA_READ_MAX_AGE_MS: '2000',
    });
    try {
      expect(layer.fence.getState()).toBe('running');
      await layer.fence.waitForBeats(1);
      const before = await metricValue('buzz_db_route_decision', { path: 'req_historical', decision: 'writer', reason: 'reader_validation_error' });
      const answer = await layer.routed.read({ path: 'req_historical', predicate: BOUNDED }, async (d) => (await sql<{ one: number }>`select 1 as one`.execute(d)).rows[0].one);
      expect(answer).toBe(1);
      expect(await metricValue('buzz_db_route_decision', { path: 'req_historical', decision: 'writer', reason: 'reader_validation_error' })).toBe(before + 1);
    } finally {
      await layer.close();
    }
  }, 20_000);
});
