/**
 * Tests of the Postgres test harness itself: a real writer, a real streaming hot standby, and
 * the fault helpers the replica-routing suites rely on.
 */
import { Client, DatabaseError, Pool } from 'pg';

import { createTestDatabase, faultSupport, type TestDatabase } from './test-database.js';

const faults = faultSupport();
const itWithFaults = faults.supported ? it : it.skip;
if (!faults.supported) {
  process.stderr.write(`[pg-pair.test] skipping fault-injection tests: ${faults.reason}\n`);
}

describe('Postgres test pair', () => {
  let db: TestDatabase;
  let writer: Pool;
  let reader: Pool;

  beforeAll(async () => {
    db = await createTestDatabase();
    writer = pool(db.writerUrl);
    reader = pool(db.readerUrl);
    await writer.query('create table harness_probe (id int primary key, note text)');
    await db.waitForReplica();
  });

  afterAll(async () => {
    await db?.cluster.heal().catch(() => undefined); // a frozen server would hang pool.end()
    await Promise.all([writer?.end(), reader?.end()]);
    await db?.drop();
  });

  it('serves the writer read-write and the replica as a hot standby', async () => {
    expect(await inRecovery(writer)).toBe(false);
    expect(await inRecovery(reader)).toBe(true);
  });

  it('was cloned from the migrated template', async () => {
    const { rows } = await reader.query<{ n: string }>(
      "select count(*) as n from information_schema.tables where table_name = 'kysely_migration'",
    );
    expect(Number(rows[0].n)).toBe(1);
  });

  it('shows a row written on the writer on the replica after waitForReplica', async () => {
    await writer.query("insert into harness_probe values (1, 'visible')");
    await db.waitForReplica();
    expect(await notes(reader)).toContain('visible');
  });

  it('refuses writes on the replica with SQLSTATE 25006', async () => {
    const err = await reader.query("insert into harness_probe values (2, 'nope')").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DatabaseError);
    expect((err as DatabaseError).code).toBe('25006');
  });

  itWithFaults('pauseReplay hides a new row on the replica until resumeReplay', async () => {
    await db.cluster.pauseReplay();
    await writer.query("insert into harness_probe values (3, 'delayed')");
    await expect(db.waitForReplica(300)).rejects.toThrow(/did not replay/);
    expect(await notes(reader)).not.toContain('delayed');
    await db.cluster.resumeReplay();
    await db.waitForReplica();
    expect(await notes(reader)).toContain('delayed');
  });

  itWithFaults('stopReplica refuses connections and startReplica brings it back streaming', async () => {
    await db.cluster.stopReplica();
    const refused = await connectOnce(db.readerUrl, 1000).catch((e: NodeJS.ErrnoException) => e);
    expect((refused as NodeJS.ErrnoException).code).toBe('ECONNREFUSED');
    await writer.query("insert into harness_probe values (4, 'while stopped')");
    await db.cluster.startReplica();
    await db.waitForReplica();
    expect(await notes(reader)).toContain('while stopped');
  });

  itWithFaults('freezeReplica makes new connections time out and thawReplica recovers', async () => {
    await db.cluster.freezeReplica();
    try {
      await expect(connectOnce(db.readerUrl, 300)).rejects.toThrow(/timeout/i);
      await writer.query("insert into harness_probe values (5, 'while frozen')"); // async replication
    } finally {
      await db.cluster.thawReplica();
    }
    await db.waitForReplica();
    expect(await notes(reader)).toContain('while frozen');
  });
});

function pool(url: string): Pool {
  const p = new Pool({ connectionString: url, max: 3, connectionTimeoutMillis: 2000 });
  p.on('error', () => undefined); // idle clients die with 57P01 when the replica stops
  return p;
}

async function inRecovery(p: Pool): Promise<boolean> {
  const { rows } = await p.query<{ r: boolean }>('select pg_is_in_recovery() as r');
  return rows[0].r;
}

async function notes(p: Pool): Promise<string[]> {
  const { rows } = await p.query<{ note: string }>('select note from harness_probe order by id');
  return rows.map((row) => row.note);
}

async function connectOnce(url: string, timeoutMs: number): Promise<void> {
  const client = new Client({ connectionString: url, connectionTimeoutMillis: timeoutMs });
  client.on('error', () => undefined);
  try {
    await client.connect();
  } finally {
    client.end().catch(() => undefined); // never awaited: end() hangs against a frozen server
  }
}
