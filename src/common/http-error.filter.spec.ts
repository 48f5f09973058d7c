import { ArgumentsHost, NotFoundException } from '@nestjs/common';
import { OwnWordingFailure, PoolTimeoutError, QueryTimedOutError, ReadShareExceededError, toDatabaseError } from '../../packages/read-path/src/database/database-errors.js';
import { HttpError } from './http-error.js';
import { HttpErrorFilter } from './http-error.filter.js';
import { markObserved, requestAnnotations } from './request-annotations.js';

function run(exception: unknown, request: object = {}): { status: number; body: unknown; headers?: Record<string, string> } {
  const out = { status: 0, body: undefined as unknown, headers: {} as Record<string, string> };
  const reply = {
    status(s: number) {
      out.status = s;
      return reply;
    },
    header(name: string, value: string) {
      if (name !== 'content-type') out.headers[name] = value;
      return reply;
    },
    send(b: string) {
      out.body = JSON.parse(b);
      return reply;
    },
  };
  const host = { switchToHttp: () => ({ getResponse: () => reply, getRequest: () => request }) } as unknown as ArgumentsHost;
  new HttpErrorFilter().catch(exception, host);
  const { headers, ...answer } = out;
  return Object.keys(headers).length > 0 ? out : answer;
}

describe("HttpErrorFilter (the relay's HTTP answers)", () => {
  it('maps a statement deadline to the terminal 503', () => {
    expect(run(new QueryTimedOutError('canceling statement due to statement timeout', { code: '57014' }))).toEqual({ status: 503, body: { error: 'query timed out' } });
  });

  it('maps an unavailable database to the retryable 503, with Retry-After', () => {
    const answer = { status: 503, body: { error: 'database unavailable' }, headers: { 'retry-after': '1' } };
    expect(run(new PoolTimeoutError('timeout exceeded when trying to connect'))).toEqual(answer);
    expect(run(toDatabaseError(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' })))).toEqual(answer);
  });

  it("maps a read refused for its key's share to 429 with Retry-After, in a path's own wording too", () => {
    const answer = { status: 429, body: { error: 'rate-limited: too many concurrent reads for this key' }, headers: { 'retry-after': '1' } };
    expect(run(new ReadShareExceededError('writer_reads'))).toEqual(answer);
    expect(run(new OwnWordingFailure(new ReadShareExceededError('history_reads'), { timedOut: 'thread window timed out' }))).toEqual(answer);
  });

  it('decides by type only: an untyped driver error is a 500 (the boundary types it, not the filter)', () => {
    expect(run({ code: '57014', message: 'canceling statement due to statement timeout' })).toEqual({ status: 500, body: { error: 'internal server error' } });
  });

  it('hides other failures behind a 500', () => {
    expect(run(new Error('secret detail'))).toEqual({ status: 500, body: { error: 'internal server error' } });
  });

  it('passes relay-decided errors through', () => {
    expect(run(new HttpError(400, 'invalid filters: x'))).toEqual({ status: 400, body: { error: 'invalid filters: x' } });
    expect(run(new HttpError(429, 'rate-limited: slow down', undefined, 3))).toEqual({ status: 429, body: { error: 'rate-limited: slow down' }, headers: { 'retry-after': '3' } });
    expect(run(new NotFoundException())).toEqual({ status: 404, body: { error: 'not found' } });
  });

  const observed = () => {
    const req = {};
    markObserved(req as never);
    return req;
  };

  it("hands the request's log line a 500's cause and a refusal's reason, never a 400's text", () => {
    const cause = Object.assign(new Error('relation "x" does not exist'), { code: '42P01' });
    const failed = observed();
    run(cause, failed);
    expect(requestAnnotations(failed as never)).toEqual({ reason: 'internal error', err: cause });
    const refused = observed();
    run(new HttpError(401, `NIP-98: ${'x'.repeat(300)}`), refused);
    expect(Buffer.byteLength(requestAnnotations(refused as never).reason!)).toBe(256);
    const invalid = observed();
    run(new HttpError(400, 'invalid event JSON: Unexpected token \'s\', "secret" is not valid JSON'), invalid);
    expect(requestAnnotations(invalid as never)).toEqual({});
  });

  it("logs a 500's cause itself where no HTTP observer writes the request's line (an importer's app)", () => {
    const filter = new HttpErrorFilter();
    const logged: unknown[] = [];
    (filter as unknown as { logger: { error: (o: unknown) => void } }).logger = { error: (o) => logged.push(o) };
    const cause = new Error('relation "y" does not exist');
    const req = {};
    const reply = { status: () => reply, header: () => reply, send: () => reply };
    filter.catch(cause, { switchToHttp: () => ({ getResponse: () => reply, getRequest: () => req }) } as unknown as ArgumentsHost);
    expect(logged).toEqual([{ err: cause }]);
    expect(requestAnnotations(req as never)).toEqual({});
  });
});
