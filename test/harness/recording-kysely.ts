/**
 * A Kysely whose driver sends nothing: it keeps every statement it is given (transaction control
 * included, as `begin` / `commit` / `rollback` text) and answers each with what `answer` says, no
 * rows by default. For specs of the statements code sends (packages/read-path's
 * statement-deadline.spec.ts, src/queries/query-snapshots.spec.ts).
 */
import {
  CompiledQuery,
  type DatabaseConnection,
  type Driver,
  Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  type QueryResult,
} from 'kysely';

/** The rows a statement gets back, or the error it fails with. */
export type Answer = (query: CompiledQuery) => readonly unknown[] | Error;

class RecordingDriver implements Driver {
  readonly sent: CompiledQuery[] = [];

  constructor(private readonly answer: Answer) {}

  async init(): Promise<void> {}
  async acquireConnection(): Promise<DatabaseConnection> {
    return {
      executeQuery: async <R>(query: CompiledQuery): Promise<QueryResult<R>> => {
        this.sent.push(query);
        const result = this.answer(query);
        if (result instanceof Error) throw result;
        return { rows: [...result] as R[] };
      },
      streamQuery: () => {
        throw new Error('the recording driver does not stream');
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

/** A Postgres-dialect Kysely on a recording driver, and the statements it has been sent so far. */
export function recordingKysely<DB>(answer: Answer = () => []): { db: Kysely<DB>; sent: CompiledQuery[] } {
  const driver = new RecordingDriver(answer);
  const db = new Kysely<DB>({
    dialect: {
      createAdapter: () => new PostgresAdapter(),
      createDriver: () => driver,
      createIntrospector: (k) => new PostgresIntrospector(k),
      createQueryCompiler: () => new PostgresQueryCompiler(),
    },
  });
  return { db, sent: driver.sent };
}
