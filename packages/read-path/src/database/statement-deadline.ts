/**
 * The tighten-only, transaction-local statement deadline of e-tag reads (database.md §5.2, seed 002).
 *
 * `withStatementDeadline(db, ms, fn)` runs `fn` inside a nested scope on one connection:
 *
 * - on an autocommit connection (a pooled `Kysely`) the scope is `BEGIN … ROLLBACK`;
 * - inside a transaction block (a Kysely `Transaction`, or a `Kysely` bound to a connection
 *   that already holds a transaction, such as the proved reader's REPEATABLE READ one) it is
 *   `SAVEPOINT … ROLLBACK TO SAVEPOINT; RELEASE SAVEPOINT`.
 *
 * Its first statement sets `statement_timeout` with `set_config(…, true)`: `ms` when the current
 * value is 0 (off) or longer, otherwise the current, tighter value. The scope is always rolled
 * back, never committed or merely released: releasing a savepoint would keep a `SET LOCAL` value
 * until the outer transaction ends. So the setting never leaks into a pooled session or into
 * later statements of the replica snapshot, and the outer snapshot is untouched (a savepoint
 * does not take a new one). The read must not write: its writes are rolled back too.
 *
 * A statement that overruns raises SQLSTATE 57014; it propagates unchanged after the rollback.
 */
import { Kysely, sql, Transaction } from 'kysely';
import { DB } from './database.types.js';

/** Per-statement deadline of every e-tag row read and e-tag COUNT (seed 002); under the desktop's 30 s request timeout. */
export const E_TAG_DEADLINE_MS = 20_000;

let savepointSeq = 0;

export async function withStatementDeadline<T>(
  db: Kysely<DB> | Transaction<DB>,
  ms: number,
  fn: (tx: Kysely<DB>) => Promise<T>,
): Promise<T> {
  if (!Number.isSafeInteger(ms) || ms <= 0) throw new RangeError(`statement deadline must be a positive integer of ms, got ${ms}`);
  if (db.isTransaction) return underSavepoint(db, ms, fn);
  return db.connection().execute(async (conn) =>
    (await insideTransactionBlock(conn)) ? underSavepoint(conn, ms, fn) : underTransaction(conn, ms, fn),
  );
}

/**
 * Whether the pinned connection is already inside a transaction block. An implicit (autocommit)
 * transaction starts at the statement that opens it, so its transaction_timestamp() equals that
 * statement's statement_timestamp() exactly (xact.c copies one into the other); in an open block
 * the transaction started at an earlier BEGIN, a round trip ago. The statement has no
 * parameters, so the driver sends it as one simple-protocol message (one statement timestamp).
 * A BEGIN here would be a silent no-op and our ROLLBACK would end the caller's transaction.
 */
async function insideTransactionBlock(conn: Kysely<DB>): Promise<boolean> {
  const { rows } = await sql<{ implicit: boolean }>`select transaction_timestamp() = statement_timestamp() as implicit`.execute(conn);
  return rows[0]?.implicit === false;
}

async function underTransaction<T>(conn: Kysely<DB>, ms: number, fn: (tx: Kysely<DB>) => Promise<T>): Promise<T> {
  await sql`begin`.execute(conn);
  return runThenUndo(conn, ms, fn, async () => {
    await sql`rollback`.execute(conn);
  });
}

async function underSavepoint<T>(tx: Kysely<DB>, ms: number, fn: (tx: Kysely<DB>) => Promise<T>): Promise<T> {
  savepointSeq = (savepointSeq + 1) % Number.MAX_SAFE_INTEGER;
  const name = sql.id(`buzz_statement_deadline_${savepointSeq}`);
  await sql`savepoint ${name}`.execute(tx);
  return runThenUndo(tx, ms, fn, async () => {
    await sql`rollback to savepoint ${name}`.execute(tx);
    await sql`release savepoint ${name}`.execute(tx);
  });
}

/** Runs fn under the tightened setting; always undoes the scope. fn's own error wins over an undo error. */
async function runThenUndo<T>(conn: Kysely<DB>, ms: number, fn: (tx: Kysely<DB>) => Promise<T>, undo: () => Promise<void>): Promise<T> {
  let result: T;
  try {
    await tightenStatementTimeout(conn, ms);
    result = await fn(conn);
  } catch (err) {
    await undo().catch(() => undefined);
    throw err;
  }
  await undo();
  return result;
}

/** pg_settings reports statement_timeout in ms; 0 means off and counts as infinite. */
async function tightenStatementTimeout(conn: Kysely<DB>, ms: number): Promise<void> {
  await sql`
    select set_config('statement_timeout',
                      case when setting::bigint = 0 or setting::bigint > ${ms}::bigint then ${String(ms)} else setting end,
                      true)
      from pg_settings where name = 'statement_timeout'`.execute(conn);
}
