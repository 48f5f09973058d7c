/**
 * The fence's start-up privilege check on the real writer + replica: an app role with
 * an ordinary app's grants but not what the fence needs is named, with what it lacks, in one
 * error line in the library's words, and its routed reads are served by the writer; with
 * `required`, start-up rejects instead, saying why.
 */
import { randomBytes } from 'node:crypto';
import { jest } from '@jest/globals';
import { Logger, type LoggerService } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import { sql } from 'kysely';
import type { Pool } from 'pg';
import { REPLICA_FLOOR_LOCK_KEY } from '../../packages/read-path/src/database/constants.js';
import { ReadPathModule, type ReadPathModuleOptions } from '../../packages/read-path/src/read-path.module.js';
import { ReplicaFenceStartError } from '../../packages/read-path/src/replica-fence/replica-fence-start-error.js';
import { ReplicaFenceService } from '../../packages/read-path/src/replica-fence/replica-fence.service.js';
import { BOUNDED } from '../../packages/read-path/src/routing/route-predicate.js';
import { RoutedReader } from '../../packages/read-path/src/routing/routed-reader.service.js';
import { createTestDatabase, type TestDatabase } from '../harness/test-database.js';
import { adminPool, waitUntil } from '../routing/database-layer.js';

let db: TestDatabase;
let admin: Pool;
const roles: string[] = [];
const apps: TestingModule[] = [];
const silent: LoggerService = { log: () => undefined, error: () => undefined, warn: () => undefined };

beforeAll(async () => {
  db = await createTestDatabase();
  admin = adminPool(db.writerUrl);
}, 60_000);

afterAll(async () => {
  for (const app of apps) await app.close();
  for (const role of roles) await admin.query(`drop owned by ${role}; drop role ${role}`);
  await admin?.end();
  await db?.drop();
}, 60_000);

/** A login role with what an ordinary app role has (DML on every table, the sequences), then `extra` ($role replaced). */
async function appRole(...extra: string[]): Promise<string> {
  const role = `fence_app_${randomBytes(4).toString('hex')}`;
  roles.push(role);
  await admin.query(`create role ${role} login`);
  await admin.query(`grant select, insert, update, delete on all tables in schema public to ${role}`);
  await admin.query(`grant usage, select on all sequences in schema public to ${role}`);
  for (const statement of extra) await admin.query(statement.replaceAll('$role', role));
  await db.waitForReplica();
  return role;
}

const as = (url: string, role: string) => {
  const u = new URL(url);
  u.username = role;
  u.password = '';
  return u.toString();
};

/** Builds the read path as an importer would (ReadPathModule) and starts it; the caller sees init's outcome. */
async function startReadPath(options: { writerUrl: string; readerUrl?: string; fence?: ReadPathModuleOptions['fence'] }): Promise<TestingModule> {
  const app = await Test.createTestingModule({
    imports: [
      ReadPathModule.forRoot({
        database: { writerUrl: options.writerUrl, readerUrl: options.readerUrl, poolSize: 2, readPoolSize: 2, migrate: false, partitionMaintenance: false },
        fence: options.fence,
        routing: { readMaxAgeMs: 2000 },
      }),
    ],
  })
    .setLogger(silent)
    .compile();
  apps.push(app);
  await app.init();
  return app;
}

/** Which server answered a routed read: the replica says it is in recovery. */
const servedBy = (routed: RoutedReader) =>
  routed.read({ path: 'bridge_query', predicate: BOUNDED }, async (d) => ((await sql<{ r: boolean }>`select pg_is_in_recovery() as r`.execute(d)).rows[0].r ? 'replica' : 'writer'));

/** The error lines the read path logged while `run` ran. */
async function errorsLoggedBy(run: () => Promise<unknown>): Promise<string[]> {
  const error = jest.spyOn(Logger.prototype, 'error');
  try {
    await run();
    return error.mock.calls.map((c) => c.map(String).join(' '));
  } finally {
    error.mockRestore();
  }
}

describe('the start-up privilege check names what the fence lacks', () => {
  it('a role without pg_monitor: named, with the option its URL came from, and routed reads go to the writer', async () => {
    const role = await appRole();
    const warn = jest.spyOn(Logger.prototype, 'warn');
    try {
      let app: TestingModule | undefined;
      const errors = await errorsLoggedBy(async () => (app = await startReadPath({ writerUrl: as(db.writerUrl, role), readerUrl: as(db.readerUrl, role) })));
      expect(errors).toEqual([
        `ReplicaFenceModule cannot open the fence: role "${role}" (DatabaseModule writerUrl) lacks pg_monitor ` +
          '(the probe must see every session in pg_stat_activity). Until then every routed read is served by the writer',
      ]);
      // The probe runs (a later GRANT would open the fence) and fails for exactly that reason.
      await waitUntil('a failed beat', () => warn.mock.calls.some((c) => (c[0] as { error_kind?: string }).error_kind === 'masked_activity'));
      expect(app!.get(ReplicaFenceService).beatCount()).toBe(0);
      expect(await servedBy(app!.get(RoutedReader))).toBe('writer');
    } finally {
      warn.mockRestore();
    }
  });

  it('a role without UPDATE on replica_heartbeat: that grant is named, and pg_monitor is not', async () => {
    const role = await appRole('grant pg_monitor to $role', 'revoke update on replica_heartbeat from $role');
    const errors = await errorsLoggedBy(() => startReadPath({ writerUrl: as(db.writerUrl, role), readerUrl: as(db.readerUrl, role) }));
    expect(errors).toEqual([
      `ReplicaFenceModule cannot open the fence: role "${role}" (DatabaseModule writerUrl) lacks UPDATE on replica_heartbeat ` +
        "(the probe's heartbeat write). Until then every routed read is served by the writer",
    ]);
  });

  it('a role without INSERT on event_tags (the events trigger writes it in the self-test): named', async () => {
    const role = await appRole('grant pg_monitor to $role', 'revoke insert on event_tags from $role');
    const errors = await errorsLoggedBy(() => startReadPath({ writerUrl: as(db.writerUrl, role), readerUrl: as(db.readerUrl, role) }));
    expect(errors[0]).toBe(
      `ReplicaFenceModule cannot open the fence: role "${role}" (DatabaseModule writerUrl) lacks INSERT on event_tags ` +
        "(the floor-guard self-test: the tag index trigger on events). Until then every routed read is served by the writer",
    );
  });

  it("a reader role that cannot read replica_heartbeat: named under readerUrl, the writer's role not at all", async () => {
    const role = await appRole('revoke select on replica_heartbeat from $role');
    const errors = await errorsLoggedBy(() => startReadPath({ writerUrl: db.writerUrl, readerUrl: as(db.readerUrl, role) }));
    expect(errors).toEqual([
      `ReplicaFenceModule cannot open the fence: role "${role}" (DatabaseModule readerUrl) lacks SELECT on replica_heartbeat ` +
        "(a routed read's proof). Until then every routed read is served by the writer",
    ]);
  });

  it('a role with an app role\'s grants and pg_monitor: nothing logged, and routed reads are served by the replica', async () => {
    const role = await appRole('grant pg_monitor to $role');
    let app: TestingModule | undefined;
    const errors = await errorsLoggedBy(async () => (app = await startReadPath({ writerUrl: as(db.writerUrl, role), readerUrl: as(db.readerUrl, role) })));
    expect(errors).toEqual([]);
    const routed = app!.get(RoutedReader);
    await routed.whenReplicaServing(20_000);
    expect(await servedBy(routed)).toBe('replica');
  });
});

describe('required: start-up fails when the fence cannot open, saying why', () => {
  /** init's rejection; the app is closed by afterAll like the others. */
  const initFailure = (options: Parameters<typeof startReadPath>[0]) => startReadPath(options).then(() => 'started', (err: unknown) => err);

  it('a role without pg_monitor: init rejects naming it', async () => {
    const role = await appRole();
    const err = await initFailure({ writerUrl: as(db.writerUrl, role), readerUrl: as(db.readerUrl, role), fence: { probe: true, required: true } });
    expect(err).toBeInstanceOf(ReplicaFenceStartError);
    expect((err as Error).message).toBe(
      `ReplicaFenceModule required: the fence cannot open: role "${role}" (DatabaseModule writerUrl) lacks pg_monitor (the probe must see every session in pg_stat_activity)`,
    );
  });

  it('no proof within firstProofTimeoutMs (the floor lock held elsewhere): init rejects with the last beat\'s failure', async () => {
    const holder = await admin.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('select pg_advisory_xact_lock_shared($1::bigint)', [REPLICA_FLOOR_LOCK_KEY.toString()]);
      const err = await initFailure({ writerUrl: db.writerUrl, readerUrl: db.readerUrl, fence: { probe: true, required: true, firstProofTimeoutMs: 2500 } });
      expect(err).toBeInstanceOf(ReplicaFenceStartError);
      expect((err as Error).message).toMatch(/^ReplicaFenceModule required: no proof within firstProofTimeoutMs 2500; the last beat failed \(lock_timeout\): /);
    } finally {
      await holder.query('ROLLBACK');
      holder.release();
    }
  });

  it('no reader: init rejects naming the option', async () => {
    const err = await initFailure({ writerUrl: db.writerUrl, fence: { probe: true, required: true } });
    expect((err as Error).message).toBe('ReplicaFenceModule required: DatabaseModule readerUrl is not set: there is no replica to prove');
  });

  it('an unverified floor guard: init rejects with the verifier\'s finding', async () => {
    const broken = await createTestDatabase();
    const pool = adminPool(broken.writerUrl);
    try {
      await pool.query('drop trigger events_created_at_floor on events');
      const err = await initFailure({ writerUrl: broken.writerUrl, readerUrl: broken.readerUrl, fence: { probe: true, required: true } });
      expect((err as Error).message).toMatch(/^ReplicaFenceModule required: the floor guard could not be verified: floor guard trigger events_created_at_floor missing or mis-shaped on: .*events/);
    } finally {
      await apps.pop()!.close();
      await pool.end();
      await broken.drop();
    }
  });

  it('what the fence needs, granted: init resolves with a proof already made, and routed reads are served by the replica', async () => {
    const role = await appRole('grant pg_monitor to $role');
    const app = await startReadPath({ writerUrl: as(db.writerUrl, role), readerUrl: as(db.readerUrl, role), fence: { probe: true, required: true } });
    expect(app.get(ReplicaFenceService).ring.newest()).toBeDefined();
    const routed = app.get(RoutedReader);
    await routed.whenReplicaServing(20_000);
    expect(await servedBy(routed)).toBe('replica');
  });
});
