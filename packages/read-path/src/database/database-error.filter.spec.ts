import 'reflect-metadata';
import { ArgumentsHost, Logger } from '@nestjs/common';
import { FILTER_CATCH_EXCEPTIONS } from '@nestjs/common/constants.js';
import { lastValueFrom, Observable } from 'rxjs';
import { DatabaseErrorFilter } from './database-error.filter.js';
import { DatabaseError, LockTimedOutError, PoolTimeoutError, QueryTimedOutError, ReadShareExceededError } from './database-errors.js';

function host(type: string, target: object): ArgumentsHost {
  return { getType: () => type, switchToHttp: () => ({ getResponse: () => target }), switchToWs: () => ({ getClient: () => target }) } as unknown as ArgumentsHost;
}

/** A reply with Fastify's and Express's common surface (status, header, send). */
function http(exception: DatabaseError): { status: number; headers: Record<string, string>; body: unknown } {
  const out = { status: 0, headers: {} as Record<string, string>, body: undefined as unknown };
  const reply = {
    status: (s: number) => ((out.status = s), reply),
    header: (name: string, value: string) => ((out.headers[name] = value), reply),
    send: (b: string) => ((out.body = JSON.parse(b)), reply),
  };
  new DatabaseErrorFilter().catch(exception, host('http', reply));
  return out;
}

describe("DatabaseErrorFilter (the library's own errors only)", () => {
  beforeAll(() => Logger.overrideLogger(false));
  afterAll(() => Logger.overrideLogger(['log', 'error', 'warn']));

  it('catches DatabaseError and its subclasses, nothing else: the app keeps its own errors', () => {
    expect(Reflect.getMetadata(FILTER_CATCH_EXCEPTIONS, DatabaseErrorFilter)).toEqual([DatabaseError]);
  });

  it('answers HTTP: 503 with Retry-After for an unavailable database, 503 without for a deadline, 429 for a key share', () => {
    const json = { 'content-type': 'application/json' };
    expect(http(new PoolTimeoutError('timeout exceeded when trying to connect'))).toEqual({ status: 503, headers: { ...json, 'retry-after': '1' }, body: { error: 'database unavailable' } });
    expect(http(new QueryTimedOutError('canceling statement due to statement timeout', { code: '57014' }))).toEqual({ status: 503, headers: json, body: { error: 'query timed out' } });
    expect(http(new ReadShareExceededError('history_reads'))).toEqual({ status: 429, headers: { ...json, 'retry-after': '1' }, body: { error: 'rate-limited: too many concurrent reads for this key' } });
    // A typed error with no answer of its own: a 500 that says nothing of its cause.
    expect(http(new LockTimedOutError('canceling statement due to lock timeout', { code: '55P03' }))).toEqual({ status: 500, headers: json, body: { error: 'internal server error' } });
  });

  it("answers a WebSocket client with Nest's exception event (ws: one frame; socket.io: emit)", () => {
    const frames: string[] = [];
    new DatabaseErrorFilter().catch(new PoolTimeoutError('x'), host('ws', { send: (d: string) => frames.push(d) }));
    expect(frames.map((f) => JSON.parse(f))).toEqual([{ event: 'exception', data: { status: 'error', message: 'database unavailable', code: 503, retryAfterSecs: 1 } }]);
    const emitted: unknown[] = [];
    new DatabaseErrorFilter().catch(new QueryTimedOutError('x'), host('ws', { emit: (event: string, data: unknown) => emitted.push([event, data]) }));
    expect(emitted).toEqual([['exception', { status: 'error', message: 'query timed out', code: 503 }]]);
  });

  it('answers RPC with an error for the transport to return', async () => {
    const result = new DatabaseErrorFilter().catch(new PoolTimeoutError('x'), host('rpc', {}));
    expect(result).toBeInstanceOf(Observable);
    await expect(lastValueFrom(result as Observable<never>)).rejects.toEqual({ status: 503, message: 'database unavailable', retryAfterSecs: 1 });
  });
});
