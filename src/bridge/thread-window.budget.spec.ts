import { HttpError } from '../common/http-error.js';
import { HistoryReadRejected } from '../routing/routed-read.types.js';
import {
  InternalThreadWindowError,
  mapThreadWindowError,
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

describe('thread window error mapping', () => {
  it.each([
    ['a statement timeout (57014, replica or writer)', pgError('57014', 'canceling statement due to statement timeout')],
    ['a lock timeout (55P03)', pgError('55P03', 'canceling statement due to lock timeout')],
    ['a pool acquire timeout', new Error('timeout exceeded when trying to connect')],
    ['a history read shed by the cap', new HistoryReadRejected('history_read_cap')],
    ['a history read shed on a saturated reader', new HistoryReadRejected('reader_acquire_timeout')],
    ['the request deadline', new ThreadWindowDeadlineExceeded('x')],
  ])('answers %s with 503 "thread database timeout; retry window"', (_name, err) => {
    const mapped = mapThreadWindowError(err);
    expect(mapped).toBeInstanceOf(HttpError);
    expect(mapped).toMatchObject({ status: 503, message: THREAD_TIMEOUT_MESSAGE });
  });

  it('answers a spent scan budget with its own 503', () => {
    expect(mapThreadWindowError(new ThreadWindowBudgetExceeded('x'))).toMatchObject({ status: 503, message: THREAD_BUDGET_MESSAGE });
  });

  it('passes HTTP errors through and keeps everything else a 500 the shared mapper cannot reclassify', () => {
    const http = new HttpError(503, 'thread authorization changed; retry query');
    expect(mapThreadWindowError(http)).toBe(http);
    for (const err of [pgError('ECONNRESET', 'Connection terminated unexpectedly'), pgError('42P01'), new Error('boom')]) {
      const mapped = mapThreadWindowError(err) as InternalThreadWindowError;
      expect(mapped).toBeInstanceOf(InternalThreadWindowError);
      expect(mapped.message).toBe('thread window failed');
      expect(mapped.cause).toBe(err);
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
