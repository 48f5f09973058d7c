/**
 * The client contract of a shed history read (seed 000; relay.md §2.12, §3.10): it is answered
 * like an unavailable database, retryable on both transports, never as the terminal timeout.
 */
import { ArgumentsHost, Logger } from '@nestjs/common';
import { DatabaseErrorFilter } from '../../packages/read-path/src/database/database-error.filter.js';
import { DatabaseError, HistoryReadRejectedError, toDatabaseError } from '../../packages/read-path/src/database/database-errors.js';
import { closedReason } from './ws-reasons.js';

function http(exception: unknown): [number, unknown] {
  const out: [number, unknown] = [0, undefined];
  const reply = {
    status: (s: number) => ((out[0] = s), reply),
    header: () => reply,
    send: (b: string) => ((out[1] = JSON.parse(b)), reply),
  };
  new DatabaseErrorFilter().catch(toDatabaseError(exception) as DatabaseError, { getType: () => 'http', switchToHttp: () => ({ getResponse: () => reply, getRequest: () => ({}) }) } as unknown as ArgumentsHost);
  return out;
}

describe('unavailable_database_maps_to_retryable_503', () => {
  beforeAll(() => Logger.overrideLogger(false));
  afterAll(() => Logger.overrideLogger(['log', 'error', 'warn']));

  const unavailable: Array<[string, unknown]> = [
    ['history read shed by the cap', new HistoryReadRejectedError('history_read_cap')],
    ['history read shed on a saturated reader', new HistoryReadRejectedError('reader_acquire_timeout')],
    ['pool timeout', new Error('timeout exceeded when trying to connect')],
    ['closed pool', new Error('Cannot use a pool after calling end on the pool')],
    ['socket failure', Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' })],
    ['connection terminated', new Error('Connection terminated unexpectedly')],
  ];

  it.each(unavailable)('%s → 503 database unavailable / CLOSED error: database error', (_what, err) => {
    expect(http(err)).toEqual([503, { error: 'database unavailable' }]);
    expect(closedReason(toDatabaseError(err)).wire).toBe('error: database error');
  });

  it('a statement deadline stays the terminal 503, other errors stay 500', () => {
    expect(http({ code: '57014', message: 'canceling statement due to statement timeout' })).toEqual([503, { error: 'query timed out' }]);
    expect(http(Object.assign(new Error('relation "x" does not exist'), { code: '42P01' }))).toEqual([500, { error: 'internal server error' }]);
    expect(http(new Error('boom'))).toEqual([500, { error: 'internal server error' }]);
  });
});
