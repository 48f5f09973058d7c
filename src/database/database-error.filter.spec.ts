import { ArgumentsHost, NotFoundException } from '@nestjs/common';
import { HttpError } from '../common/http-error.js';
import { DatabaseErrorFilter } from './database-error.filter.js';
import { PoolTimeoutError, QueryTimedOutError, toDatabaseError } from './database-errors.js';

function run(exception: unknown): { status: number; body: unknown } {
  const out = { status: 0, body: undefined as unknown };
  const reply = {
    status(s: number) {
      out.status = s;
      return reply;
    },
    header() {
      return reply;
    },
    send(b: string) {
      out.body = JSON.parse(b);
      return reply;
    },
  };
  const host = { switchToHttp: () => ({ getResponse: () => reply }) } as unknown as ArgumentsHost;
  new DatabaseErrorFilter().catch(exception, host);
  return out;
}

describe('DatabaseErrorFilter', () => {
  it('maps a statement deadline to the terminal 503', () => {
    expect(run(new QueryTimedOutError('canceling statement due to statement timeout', { code: '57014' }))).toEqual({ status: 503, body: { error: 'query timed out' } });
  });

  it('maps an unavailable database to the retryable 503', () => {
    expect(run(new PoolTimeoutError('timeout exceeded when trying to connect'))).toEqual({ status: 503, body: { error: 'database unavailable' } });
    expect(run(toDatabaseError(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' })))).toEqual({ status: 503, body: { error: 'database unavailable' } });
  });

  it('decides by type only: an untyped driver error is a 500 (the boundary types it, not the filter)', () => {
    expect(run({ code: '57014', message: 'canceling statement due to statement timeout' })).toEqual({ status: 500, body: { error: 'internal server error' } });
  });

  it('hides other failures behind a 500', () => {
    expect(run(new Error('secret detail'))).toEqual({ status: 500, body: { error: 'internal server error' } });
  });

  it('passes relay-decided errors through', () => {
    expect(run(new HttpError(400, 'invalid filters: x'))).toEqual({ status: 400, body: { error: 'invalid filters: x' } });
    expect(run(new NotFoundException())).toEqual({ status: 404, body: { error: 'not found' } });
  });
});
