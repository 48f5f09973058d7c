/**
 * withStatementDeadline on the real writer + replica pair (database.md §5.2, §8.6): the
 * transaction-local deadline tightens but never loosens, never leaks into the pooled session,
 * and inside the replica's REPEATABLE READ READ ONLY transaction it keeps the outer snapshot.
 */
import { Kysely, PostgresDialect, sql } from 'kysely';
import { Pool, PoolClient } from 'pg';
import { DB } from '../../packages/read-path/src/database/database.types.js';
import { E_TAG_DEADLINE_MS, withStatementDeadline } from '../../packages/read-path/src/database/statement-deadline.js';
import { kyselyOn } from '../../packages/read-path/src/database/kysely-on-client.js';
import { createTestDatabase, TestDatabase } from '../harness/test-database.js';

let db: TestDatabase;
let writerPool: Pool;
let writer: Kysely<DB>;
let readerPool: Pool;
let reader: Kysely<DB>;

beforeAll(async () => {
  db = await createTestDatabase();
  // One connection each: "the same pooled session" is then the only session.
  writerPool = new Pool({ connectionString: db.writerUrl, max: 1 });
  readerPool = new Pool({ connectionString: db.readerUrl, max: 1 });
  writer = new Kysely<DB>({ dialect: new PostgresDialect({ pool: writerPool }) });
  reader = new Kysely<DB>({ dialect: new PostgresDialect({ pool: readerPool }) });
  await sql`create table deadline_probe (n int not null)`.execute(writer);
  await sql`insert into deadline_probe values (1)`.execute(writer);
  await db.waitForReplica();
}, 20_000);

afterAll(async () => {
  await writer?.destroy();
  await reader?.destroy();
  await db?.drop();
}, 20_000);

afterEach(async () => {
  await sql`reset statement_timeout`.execute(writer);
});

async function show(k: Kysely<DB>): Promise<string> {
  const { rows } = await sql<{ statement_timeout: string }>`show statement_timeout`.execute(k);
  return rows[0].statement_timeout;
}

async function backendPid(k: Kysely<DB>): Promise<number> {
  const { rows } = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(k);
  return rows[0].pid;
}

async function sleepFor(k: Kysely<DB>, secs: number): Promise<void> {
  await sql`select pg_sleep(${secs})`.execute(k);
}

/** Runs fn, returning its error (or undefined) and how long it took. */
async function timed(fn: () => Promise<unknown>): Promise<{ err: { code?: string } | undefined; ms: number }> {
  const started = Date.now();
  try {
    await fn();
    return { err: undefined, ms: Date.now() - started };
  } catch (err) {
    return { err: err as { code?: string }, ms: Date.now() - started };
  }
}

async function probeCount(k: Kysely<DB>): Promise<number> {
  const { rows } = await sql<{ n: number }>`select count(*)::int as n from deadline_probe`.execute(k);
  return rows[0].n;
}

describe('withStatementDeadline on the writer (autocommit pool)', () => {
  it('exports the 20 s e-tag deadline', () => {
    expect(E_TAG_DEADLINE_MS).toBe(20_000);
  });

  it('tightens an unset session timeout: a longer statement is cancelled with 57014', async () => {
    expect(await show(writer)).toBe('0');
    const { err, ms } = await timed(() => withStatementDeadline(writer, 100, (tx) => sleepFor(tx, 3)));
    expect(err?.code).toBe('57014');
    expect(ms).toBeLessThan(2000);
  });

  it('never loosens a tighter session timeout', async () => {
    await sql`set statement_timeout = 100`.execute(writer);
    const { err, ms } = await timed(() => withStatementDeadline(writer, 20_000, (tx) => sleepFor(tx, 3)));
    expect(err?.code).toBe('57014');
    expect(ms).toBeLessThan(2000);
    expect(await show(writer)).toBe('100ms');
  });

  it('sets the value inside the scope only and leaks nothing into the pooled session', async () => {
    const pid = await backendPid(writer);
    const inside = await withStatementDeadline(writer, 1234, async (tx) => ({ timeout: await show(tx), pid: await backendPid(tx) }));
    expect(inside).toEqual({ timeout: '1234ms', pid });
    expect(await backendPid(writer)).toBe(pid);
    expect(await show(writer)).toBe('0');

    await sql`set statement_timeout = '5s'`.execute(writer);
    expect(await withStatementDeadline(writer, E_TAG_DEADLINE_MS, (tx) => show(tx))).toBe('5s');
    expect(await show(writer)).toBe('5s');
  });

  it('leaves the session outside any transaction after a success and after a cancel', async () => {
    await withStatementDeadline(writer, 1000, (tx) => probeCount(tx));
    await timed(() => withStatementDeadline(writer, 50, (tx) => sleepFor(tx, 1)));
    const { rows } = await sql<{ implicit: boolean }>`select transaction_timestamp() = statement_timestamp() as implicit`.execute(writer);
    expect(rows[0].implicit).toBe(true);
    expect(await show(writer)).toBe('0');
    expect(await probeCount(writer)).toBe(1);
  });

  it('rolls the nested scope back, so a stray write does not survive', async () => {
    await withStatementDeadline(writer, 1000, (tx) => sql`insert into deadline_probe values (2)`.execute(tx));
    expect(await probeCount(writer)).toBe(1);
  });

  it('rejects a non-positive deadline before touching the database', async () => {
    await expect(withStatementDeadline(writer, 0, async () => 1)).rejects.toThrow(RangeError);
  });
});

describe('withStatementDeadline inside the replica snapshot', () => {
  /** Commits a row on the writer and waits until the replica has replayed it. */
  async function commitOnWriterAndReplay(): Promise<void> {
    await sql`insert into deadline_probe values (3)`.execute(writer);
    await db.waitForReplica();
  }

  afterAll(async () => {
    await sql`delete from deadline_probe where n = 3`.execute(writer);
    await db.waitForReplica();
  });

  it('uses a savepoint in a Kysely transaction and keeps its snapshot and setting', async () => {
    await reader
      .transaction()
      .setIsolationLevel('repeatable read')
      .setAccessMode('read only')
      .execute(async (tx) => {
        await sql`select set_config('statement_timeout', '7000', true)`.execute(tx);
        const before = await probeCount(tx);
        const started = (await sql<{ t: string }>`select transaction_timestamp()::text as t`.execute(tx)).rows[0].t;
        await commitOnWriterAndReplay();

        expect(await withStatementDeadline(tx, 300, async (inner) => ({ n: await probeCount(inner), timeout: await show(inner) }))).toEqual({ n: before, timeout: '300ms' });
        const cancelled = await timed(() => withStatementDeadline(tx, 100, (inner) => sleepFor(inner, 3)));
        expect(cancelled.err?.code).toBe('57014');
        expect(cancelled.ms).toBeLessThan(2000);

        // Still the same transaction, the same snapshot and the outer (local) setting.
        expect(await probeCount(tx)).toBe(before);
        expect(await show(tx)).toBe('7s');
        expect((await sql<{ t: string }>`select transaction_timestamp()::text as t`.execute(tx)).rows[0].t).toBe(started);
      });
    // A fresh transaction sees the committed row: the snapshot above really was an old one.
    expect(await probeCount(reader)).toBe(2);
    expect(await show(reader)).toBe('0');
  });

  it('detects the proved reader shape: a Kysely bound to a client already inside BEGIN REPEATABLE READ', async () => {
    const client: PoolClient = await readerPool.connect();
    try {
      await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY');
      const bound = kyselyOn(client);
      const before = await probeCount(bound);
      await sql`insert into deadline_probe values (3)`.execute(writer);
      await db.waitForReplica();

      const cancelled = await timed(() => withStatementDeadline(bound, 100, (inner) => sleepFor(inner, 3)));
      expect(cancelled.err?.code).toBe('57014');
      expect(await withStatementDeadline(bound, 250, (inner) => show(inner))).toBe('250ms');

      // A BEGIN/ROLLBACK pair would have ended the caller's transaction and its snapshot.
      const { rows } = await client.query<{ implicit: boolean }>('select transaction_timestamp() = statement_timestamp() as implicit');
      expect(rows[0].implicit).toBe(false);
      expect(await probeCount(bound)).toBe(before);
      expect(await show(bound)).toBe('0');
      await client.query('ROLLBACK');
    } finally {
      client.release();
    }
  });
});
