/**
 * A normal start leaves no ERROR line in Postgres's server log: migrations to latest
 * plus the partition manager, on a fresh database and again on the migrated one. Operators and
 * library importers read that log, and an ERROR there on every start looks like a fault.
 *
 * Reads the writer's log file, which only the local pair exposes (pg_ctl -l <base>/primary.log).
 * The default log_line_prefix is '%m [%p] ', so the lines are matched to this test's backends
 * by pid: other test files running at the same time on the same server may log errors of their own.
 */
import { randomBytes } from 'node:crypto';
import { open, stat } from 'node:fs/promises';

import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';

import { nodeAt } from '../../src/database/embedded/pg-cluster.types.js';
import { migrateToLatest } from '../../packages/read-path/src/database/migrator.js';
import { ensureFuturePartitions, monthlyPartition, PARTITIONED_TABLES } from '../../packages/read-path/src/database/partition-manager.js';

const baseDir = process.env.BUZZ_TEST_PG_PROVIDER === 'local' ? process.env.BUZZ_TEST_PG_BASE : undefined;
const itWithServerLog = baseDir ? it : it.skip;
const MONTHS_AHEAD = 3;

/** Everything the server appended to `file` from byte `offset` on. */
async function readFrom(file: string, offset: number): Promise<string> {
  const handle = await open(file, 'r');
  try {
    const { size } = await handle.stat();
    const buffer = Buffer.alloc(Math.max(0, size - offset));
    await handle.read(buffer, 0, buffer.length, offset);
    return buffer.toString('utf8');
  } finally {
    await handle.close();
  }
}

/** A Kysely handle whose pool records the backend pid of every connection it opens. */
function trackedConnection(url: string): { db: Kysely<any>; pids: () => Promise<number[]> } {
  const pool = new pg.Pool({ connectionString: url, max: 3 });
  pool.on('error', () => undefined);
  const seen: Promise<number>[] = [];
  // Queued on the new client before the pool hands it out, so it runs before any of our statements.
  pool.on('connect', (client) => {
    seen.push(client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid').then((r) => r.rows[0].pid));
  });
  return { db: new Kysely<any>({ dialect: new PostgresDialect({ pool }) }), pids: () => Promise.all(seen) };
}

describe('a normal start on the writer', () => {
  let admin: pg.Pool;
  let name: string;
  let logFile: string;

  beforeAll(async () => {
    if (!baseDir) return;
    logFile = nodeAt(baseDir, 'primary').logFile;
    admin = new pg.Pool({ connectionString: process.env.BUZZ_TEST_PG_WRITER_URL, max: 1 });
    admin.on('error', () => undefined);
    // Not the migrated template: the first start must run every migration.
    name = `buzz_quiet_${randomBytes(4).toString('hex')}`;
    await admin.query(`CREATE DATABASE ${name}`);
  });

  afterAll(async () => {
    if (!admin) return;
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  });

  /** Runs `start` on fresh connections; `errors` are the ERROR (or worse) lines their backends logged. */
  async function watchServerLog<T>(start: (db: Kysely<any>) => Promise<T>): Promise<{ result: T; errors: string[] }> {
    const url = new URL(process.env.BUZZ_TEST_PG_WRITER_URL as string);
    url.pathname = `/${name}`;
    const offset = (await stat(logFile)).size;
    const { db, pids } = trackedConnection(url.toString());
    try {
      const result = await start(db);
      const ours = await pids();
      expect(ours.length).toBeGreaterThan(0);
      const lines = (await readFrom(logFile, offset)).split('\n');
      const errors = lines.filter((line) => /\b(ERROR|FATAL|PANIC):/.test(line) && ours.some((pid) => line.includes(`[${pid}]`)));
      return { result, errors };
    } finally {
      await db.destroy();
    }
  }

  /** What DatabaseService.start does with `migrate` and partition maintenance on. */
  async function relayStart(db: Kysely<any>, now: Date): Promise<string[]> {
    await migrateToLatest(db);
    return ensureFuturePartitions(db, MONTHS_AHEAD, now);
  }

  itWithServerLog('logs no ERROR on a fresh database, nor on restarts of the migrated one', async () => {
    const now = new Date();
    const fresh = await watchServerLog((db) => relayStart(db, now));
    expect(fresh.errors).toEqual([]);
    const restart = await watchServerLog((db) => relayStart(db, now));
    expect(restart).toEqual({ result: [], errors: [] });

    // A restart a year on (past the catch-all's lower bound whatever the clock says): the
    // manager splits the empty catch-all into new months. Then one whose months an older
    // partition covers (events_p_past): left to it. Both quietly.
    const yearOn = new Date(Date.UTC(Math.max(now.getUTCFullYear() + 1, 2027), now.getUTCMonth(), 15));
    const later = await watchServerLog((db) => relayStart(db, yearOn));
    expect(later.errors).toEqual([]);
    for (const table of PARTITIONED_TABLES) {
      expect(later.result).toContain(monthlyPartition(table, yearOn.getUTCFullYear(), yearOn.getUTCMonth() + 1).name);
    }
    const covered = await watchServerLog((db) => relayStart(db, new Date(Date.UTC(2025, 5, 15))));
    expect(covered).toEqual({ result: [], errors: [] });
  });

  itWithServerLog('reads the log it checks: a failing statement on a tracked backend is found', async () => {
    const { errors } = await watchServerLog(async (db) => {
      await expect(sql`SELECT 1 / 0`.execute(db)).rejects.toThrow(/division by zero/);
    });
    expect(errors).toEqual([expect.stringContaining('ERROR:  division by zero')]);
  });
});
