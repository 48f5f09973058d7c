import {
  DatabaseUnavailableError,
  HistoryReadRejectedError,
  LockTimedOutError,
  PoolTimeoutError,
  QueryTimedOutError,
  toDatabaseError,
  WriterReadRejectedError,
} from './database-errors.js';

describe('toDatabaseError (the pool / RoutedReader boundary)', () => {
  it('types only a statement cancel as the terminal timeout, keeping code and cause', () => {
    const raw = { code: '57014', message: 'canceling statement due to statement timeout' };
    const typed = toDatabaseError(raw) as QueryTimedOutError;
    expect(typed).toBeInstanceOf(QueryTimedOutError);
    expect(typed).toMatchObject({ code: '57014', message: raw.message, cause: raw, name: 'QueryTimedOutError' });
    expect(toDatabaseError({ code: '55P03', message: 'canceling statement due to lock timeout' })).toBeInstanceOf(LockTimedOutError);
  });

  it.each([
    [{ message: 'timeout exceeded when trying to connect' }],
    [{ message: 'Connection terminated due to connection timeout' }],
  ])('types %p as a pool timeout', (err) => {
    expect(toDatabaseError(err)).toBeInstanceOf(PoolTimeoutError);
  });

  it.each([
    [{ code: 'ECONNREFUSED', message: 'connect ECONNREFUSED 127.0.0.1:1' }],
    [{ code: '57P01', message: 'terminating connection due to administrator command' }],
    [{ code: '08006', message: 'connection failure' }],
    [{ code: '53300', message: 'sorry, too many clients already' }],
    [{ message: 'Connection terminated unexpectedly' }],
    [{ message: 'Query read timeout' }],
    [{ message: 'Cannot use a pool after calling end on the pool' }],
    [{ code: '55000', message: 'database "buzz" is not currently accepting connections' }],
  ])('types %p as an unavailable database, never as a timeout', (err) => {
    const typed = toDatabaseError(err);
    expect(typed).toBeInstanceOf(DatabaseUnavailableError);
    expect(typed).not.toBeInstanceOf(QueryTimedOutError);
  });

  it('leaves every other failure as it is, SQLSTATE and all', () => {
    const unique = Object.assign(new Error('duplicate key value violates unique constraint'), { code: '23505' });
    expect(toDatabaseError(unique)).toBe(unique);
    const boom = new Error('boom');
    expect(toDatabaseError(boom)).toBe(boom);
    expect(toDatabaseError(null)).toBe(null);
    const typed = new QueryTimedOutError('x');
    expect(toDatabaseError(typed)).toBe(typed);
  });

  it('types shed reads as pool timeouts: retryable, never the terminal timeout', () => {
    for (const err of [new HistoryReadRejectedError('history_read_cap'), new HistoryReadRejectedError('reader_acquire_timeout'), new WriterReadRejectedError()]) {
      expect(err).toBeInstanceOf(PoolTimeoutError);
      expect(err).toBeInstanceOf(DatabaseUnavailableError);
      expect(err).not.toBeInstanceOf(QueryTimedOutError);
    }
    expect(new HistoryReadRejectedError('history_read_cap')).toMatchObject({ name: 'HistoryReadRejectedError', reason: 'history_read_cap', message: 'history read rejected: history_read_cap' });
  });
});
