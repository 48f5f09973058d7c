/**
 * The statement sequence of withStatementDeadline, on a recording driver: which nested scope it
 * opens for each kind of handle, that the scope is always rolled back (never committed or only
 * released), and that fn's error wins. The behaviour on real Postgres is covered by
 * test/long-thread/statement-deadline.test.ts.
 */
import { Kysely, sql } from 'kysely';
import { recordingKysely } from '../../../../test/harness/recording-kysely.js';
import { DB } from './database.types.js';
import { withStatementDeadline } from './statement-deadline.js';

/** A recording Kysely: `set_config` statements by that name, pg_sleep timed out, the block probe answered. */
function recording(insideBlock = false): { db: Kysely<DB>; texts: () => string[] } {
  const { db, sent } = recordingKysely<DB>((q) => {
    if (q.sql.includes('pg_sleep')) return Object.assign(new Error('canceling statement due to statement timeout'), { code: '57014' });
    return q.sql.includes('transaction_timestamp()') ? [{ implicit: !insideBlock }] : [];
  });
  const texts = () => sent.map((q) => q.sql.replace(/\s+/g, ' ').trim()).map((t) => (t.startsWith('select set_config') ? 'set_config' : t));
  return { db, texts };
}

const read = (tx: Kysely<DB>) => sql`select 1`.execute(tx);
const PROBE = 'select transaction_timestamp() = statement_timestamp() as implicit';

describe('withStatementDeadline statement sequence', () => {
  it('opens BEGIN … ROLLBACK on an autocommit connection', async () => {
    const { db, texts } = recording(false);
    await withStatementDeadline(db, 20_000, read);
    expect(texts()).toEqual([PROBE, 'begin', 'set_config', 'select 1', 'rollback']);
  });

  it('uses a savepoint, rolled back then released, when the connection is already in a transaction block', async () => {
    const { db, texts } = recording(true);
    await withStatementDeadline(db, 20_000, read);
    expect(texts()).toEqual([
      PROBE,
      expect.stringMatching(/^savepoint "buzz_statement_deadline_\d+"$/),
      'set_config',
      'select 1',
      expect.stringMatching(/^rollback to savepoint "buzz_statement_deadline_\d+"$/),
      expect.stringMatching(/^release savepoint "buzz_statement_deadline_\d+"$/),
    ]);
  });

  it('uses a savepoint without probing inside a Kysely transaction', async () => {
    const { db, texts } = recording(false);
    await db.transaction().execute((tx) => withStatementDeadline(tx, 20_000, read));
    expect(texts().map((s) => s.replace(/"buzz_statement_deadline_\d+"/, 'sp'))).toEqual([
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
    const { db, texts } = recording(false);
    await expect(withStatementDeadline(db, 100, (tx) => sql`select pg_sleep(1)`.execute(tx))).rejects.toMatchObject({ code: '57014' });
    expect(texts().slice(-2)).toEqual(['select pg_sleep(1)', 'rollback']);
  });

  it.each([0, -5, 1.5, Number.NaN])('refuses a deadline of %p ms without running anything', async (ms) => {
    const { db, texts } = recording(false);
    await expect(withStatementDeadline(db, ms, read)).rejects.toThrow(RangeError);
    expect(texts()).toEqual([]);
  });
});
