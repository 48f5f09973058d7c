import { classifyDbError, closedReasonFor } from './pg-errors.js';

describe('classifyDbError', () => {
  it('maps only a statement cancel to the terminal timeout', () => {
    expect(classifyDbError({ code: '57014', message: 'canceling statement due to statement timeout' })).toBe('timeout');
    expect(closedReasonFor({ code: '57014' })).toBe('error: query timed out');
  });

  it.each([
    [{ message: 'timeout exceeded when trying to connect' }],
    [{ message: 'Connection terminated due to connection timeout' }],
    [{ code: 'ECONNREFUSED', message: 'connect ECONNREFUSED 127.0.0.1:1' }],
    [{ code: '57P01', message: 'terminating connection due to administrator command' }],
    [{ message: 'Query read timeout' }],
    [{ message: 'Cannot use a pool after calling end on the pool' }],
    [{ code: '55000', message: 'database "buzz" is not currently accepting connections' }],
  ])('treats %p as unavailable, never as a timeout', (err) => {
    expect(classifyDbError(err)).toBe('unavailable');
    expect(closedReasonFor(err)).toBe('error: database error');
  });

  it('leaves other errors internal', () => {
    expect(classifyDbError({ code: '42P01', message: 'relation does not exist' })).toBe('internal');
    expect(classifyDbError(new Error('boom'))).toBe('internal');
    expect(classifyDbError(null)).toBe('internal');
  });
});

describe('a shed history read (seed 000)', () => {
  it.each(['history_read_cap', 'reader_acquire_timeout'] as const)('classifies HistoryReadRejected(%s) as unavailable, never as a timeout', async (reason) => {
    const { HistoryReadRejected } = await import('../routing/routed-read.types.js');
    const err = new HistoryReadRejected(reason);
    expect(classifyDbError(err)).toBe('unavailable');
    expect(closedReasonFor(err)).toBe('error: database error');
  });
});
