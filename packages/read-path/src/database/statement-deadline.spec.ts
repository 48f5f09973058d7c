/**
 * The statement sequence of withStatementDeadline, on a recording driver: which nested scope it
 * opens for each kind of handle, that the scope is always rolled back (never committed or only
 * released), and that fn's error wins. The behaviour on real Postgres is covered by
 * test/long-thread/statement-deadline.test.ts.
 */
import {
  CompiledQuery,
  DatabaseConnection,
  Driver,
  Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  QueryResult,
  sql,
} from 'kysely';
import { DB } from './database.types.js';
import { withStatementDeadline } from './statement-deadline.js';

class RecordingDriver implements Driver {
  readonly statements: string[] = [];

  constructor(private readonly insideBlock: boolean) {}

  async init(): Promise<void> {}
  async acquireConnection(): Promise<DatabaseConnection> {
    return {
      executeQuery: async <R>(q: CompiledQuery): Promise<QueryResult<R>> => {
        const text = q.sql.replace(/\s+/g, ' ').trim();
        this.statements.push(text.startsWith('select set_config') ? 'set_config' : text);
        if (text.includes('pg_sleep')) throw Object.assign(new Error('canceling statement due to statement timeout'), { code: '57014' });
        const rows = text.includes('transaction_timestamp()') ? [{ implicit: !this.insideBlock }] : [];
        return { rows: rows as R[] };
      },
      streamQuery: () => {
        throw new Error('not used');
      },
    };
  }
  async beginTransaction(conn: DatabaseConnection): Promise<void> {
    await conn.executeQuery(CompiledQuery.raw('begin'));
  }
  async commitTransaction(conn: DatabaseConnection): Promise<void> {
    await conn.executeQuery(CompiledQuery.raw('commit'));
  }
  async rollbackTransaction(conn: DatabaseConnection): Promise<void> {
    await conn.executeQuery(CompiledQuery.raw('rollback'));
  }
  async releaseConnection(): Promise<void> {}
  async destroy(): Promise<void> {}
}

function recording(insideBlock = false): { db: Kysely<DB>; statements: string[] } {
  const driver = new RecordingDriver(insideBlock);
  const db = new Kysely<DB>({
    dialect: {
      createAdapter: () => new PostgresAdapter(),
      createDriver: () => driver,
      createIntrospector: (k) => new PostgresIntrospector(k),
      createQueryCompiler: () => new PostgresQueryCompiler(),
    },
  });
  return { db, statements: driver.statements };
}

const read = (tx: Kysely<DB>) => sql`select 1`.execute(tx);
const PROBE = 'select transaction_timestamp() = statement_timestamp() as implicit';

describe('withStatementDeadline statement sequence', () => {
  it('opens BEGIN … ROLLBACK on an autocommit connection', async () => {
    const { db, statements } = recording(false);
    await withStatementDeadline(db, 20_000, read);
    expect(statements).toEqual([PROBE, 'begin', 'set_config', 'select 1', 'rollback']);
  });

  it('uses a savepoint, rolled back then released, when the connection is already in a transaction block', async () => {
    const { db, statements } = recording(true);
    await withStatementDeadline(db, 20_000, read);
    expect(statements).toEqual([
      PROBE,
      expect.stringMatching(/^savepoint "buzz_statement_deadline_\d+"$/),
      'set_config',
      'select 1',
      expect.stringMatching(/^rollback to savepoint "buzz_statement_deadline_\d+"$/),
      expect.stringMatching(/^release savepoint "buzz_statement_deadline_\d+"$/),
    ]);
  });

  it('uses a savepoint without probing inside a Kysely transaction', async () => {
    const { db, statements } = recording(false);
    await db.transaction().execute((tx) => withStatementDeadline(tx, 20_000, read));
    expect(statements.map((s) => s.replace(/"buzz_statement_deadline_\d+"/, 'sp'))).toEqual([
      'begin',
      'savepoint sp',
      'set_config',
      'select 1',
      'rollback to savepoint sp',
      'release savepoint sp',
      'commit',
    ]);
  });

  it('rolls back after a cancel and rethrows the 57014 unchanged', async () => {
    const { db, statements } = recording(false);
    await expect(withStatementDeadline(db, 100, (tx) => sql`select pg_sleep(1)`.execute(tx))).rejects.toMatchObject({ code: '57014' });
    expect(statements.slice(-2)).toEqual(['select pg_sleep(1)', 'rollback']);
  });

  it.each([0, -5, 1.5, Number.NaN])('refuses a deadline of %p ms without running anything', async (ms) => {
    const { db, statements } = recording(false);
    await expect(withStatementDeadline(db, ms, read)).rejects.toThrow(RangeError);
    expect(statements).toEqual([]);
  });
});
