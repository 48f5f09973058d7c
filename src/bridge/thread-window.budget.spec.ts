import { Logger } from '@nestjs/common';
import { HttpError } from '../common/http-error.js';
import { HttpErrorFilter } from '../common/http-error.filter.js';
import { HistoryReadRejectedError, OwnWordingFailure, toDatabaseError, WriterReadRejectedError } from '../../packages/read-path/src/database/database-errors.js';
import {
  MAX_AUX_QUERIES,
  MAX_SCANNED_BYTES,
  MAX_SCANNED_ROWS,
  RequestDeadline,
  ScanBudget,
  THREAD_BUDGET_MESSAGE,
  THREAD_TIMEOUT_MESSAGE,
  ThreadWindowBudgetExceeded,
  ThreadWindowDeadlineExceeded,
} from './thread-window.budget.js';

function pgError(code: string, message = 'pg'): Error {
  return Object.assign(new Error(message), { code });
}

/** What the one HTTP filter answers for a thread window that failed with `cause` (typed at the boundary). */
function answer(cause: unknown): [number, Record<string, unknown>] {
  const { status, body } = new HttpErrorFilter().answer(new OwnWordingFailure(toDatabaseError(cause), { timedOut: THREAD_TIMEOUT_MESSAGE }));
  return [status, body];
}

describe('thread window answers (relay.md §3.6b), decided by the one filter', () => {
  beforeAll(() => Logger.overrideLogger(false));
  afterAll(() => Logger.overrideLogger(['log', 'error', 'warn']));

  it.each([
    ['a statement timeout (57014, replica or writer)', pgError('57014', 'canceling statement due to statement timeout')],
    ['a lock timeout (55P03)', pgError('55P03', 'canceling statement due to lock timeout')],
    ['a pool acquire timeout', new Error('timeout exceeded when trying to connect')],
    ['a history read shed by the cap', new HistoryReadRejectedError('history_read_cap')],
    ['a history read shed on a saturated reader', new HistoryReadRejectedError('reader_acquire_timeout')],
    ['a writer read refused at the writer-read cap', new WriterReadRejectedError()],
    ['the request deadline', new ThreadWindowDeadlineExceeded('x')],
  ])('answers %s with 503 "thread database timeout; retry window"', (_name, err) => {
    expect(answer(err)).toEqual([503, { error: THREAD_TIMEOUT_MESSAGE }]);
  });

  it('answers a spent scan budget with its own 503', () => {
    expect(answer(new ThreadWindowBudgetExceeded('x'))).toEqual([503, { error: THREAD_BUDGET_MESSAGE }]);
  });

  it('passes relay-decided HTTP errors through and keeps everything else a 500, an unavailable database included', () => {
    expect(answer(new HttpError(503, 'thread authorization changed; retry query'))).toEqual([503, { error: 'thread authorization changed; retry query' }]);
    for (const err of [pgError('ECONNRESET', 'Connection terminated unexpectedly'), pgError('42P01'), new Error('boom')]) {
      expect(answer(err)).toEqual([500, { error: 'internal server error' }]);
    }
  });
});

describe('thread window limits', () => {
  it('gives each statement min(4 s, time left) and refuses one with no time left', () => {
    let now = 1_000;
    const deadline = new RequestDeadline(8000, () => now);
    expect(deadline.statementMs()).toBe(4000);
    now += 6500;
    expect(deadline.statementMs()).toBe(1500);
    now += 1500;
    expect(() => deadline.statementMs()).toThrow(ThreadWindowDeadlineExceeded);
  });

  it('counts aux queries, rows and bytes across the request', () => {
    const queries = new ScanBudget();
    for (let i = 0; i < MAX_AUX_QUERIES; i++) queries.auxQuery();
    expect(() => queries.auxQuery()).toThrow(ThreadWindowBudgetExceeded);
    const rows = new ScanBudget();
    rows.scanned(MAX_SCANNED_ROWS, 0);
    expect(() => rows.scanned(1, 0)).toThrow(ThreadWindowBudgetExceeded);
    const bytes = new ScanBudget();
    bytes.scanned(1, MAX_SCANNED_BYTES);
    expect(() => bytes.scanned(1, 1)).toThrow(ThreadWindowBudgetExceeded);
  });
});
