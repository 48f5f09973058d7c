import { ArgumentsHost, Catch, ExceptionFilter, Logger } from '@nestjs/common';
import { throwError, type Observable } from 'rxjs';
import { DatabaseError, DatabaseUnavailableError, QueryTimedOutError, ReadShareExceededError } from './database-errors.js';

/** What a failed read answers: an HTTP status, a JSON body, and `Retry-After` seconds when a retry may succeed. */
export interface DatabaseErrorAnswer {
  readonly status: number;
  readonly body: { readonly error: string };
  readonly retryAfterSecs?: number;
}

/** Seconds a retryable answer asks the client to wait: a shed read's queue turns over in about that. */
const RETRY_AFTER_SECS = 1;

/**
 * The library's answer for one of its typed errors (relay.md §3.10), or undefined for one it has
 * no answer for (a lock timeout, an unclassified DatabaseError): that stays the app's to decide.
 *
 * - a statement deadline (QueryTimedOutError): 503 `query timed out`, terminal, no `Retry-After`;
 * - an unavailable database (DatabaseUnavailableError: pool timeout, shed read, closed pool,
 *   socket failure): 503 `database unavailable`, `Retry-After: 1`;
 * - a read refused for its key's share (ReadShareExceededError): 429
 *   `rate-limited: too many concurrent reads for this key`, `Retry-After: 1`.
 */
export function databaseErrorAnswer(exception: unknown): DatabaseErrorAnswer | undefined {
  if (exception instanceof ReadShareExceededError) return { status: 429, body: { error: 'rate-limited: too many concurrent reads for this key' }, retryAfterSecs: RETRY_AFTER_SECS };
  if (exception instanceof QueryTimedOutError) return { status: 503, body: { error: 'query timed out' } };
  if (exception instanceof DatabaseUnavailableError) return { status: 503, body: { error: 'database unavailable' }, retryAfterSecs: RETRY_AFTER_SECS };
  return undefined;
}

const INTERNAL: DatabaseErrorAnswer = { status: 500, body: { error: 'internal server error' } };

/** The reply side of Fastify and Express alike: both have `status`, `header` and `send`. */
interface HttpReply {
  status(code: number): unknown;
  header(name: string, value: string): unknown;
  send(body: string): unknown;
}

/** A WebSocket client: `ws` (send) or socket.io (emit). */
interface WsClient {
  send?(data: string): unknown;
  emit?(event: string, data: unknown): unknown;
}

/**
 * The library's exception filter: it catches the library's typed errors only (DatabaseError and
 * its subclasses; anything else goes on to the app's own filters and Nest's defaults) and answers
 * with databaseErrorAnswer, in the context the error was thrown in:
 *
 * - HTTP (Fastify or Express): the status, the JSON body and `Retry-After`;
 * - WebSocket: Nest's `exception` event, `{ status: 'error', message, code, retryAfterSecs }`;
 * - RPC: an error `{ status, message, retryAfterSecs }` for the transport to return.
 *
 * A DatabaseError without an answer is a 500 whose cause is logged, never sent. The library binds
 * nothing: an app binds it (`{ provide: APP_FILTER, useClass: DatabaseErrorFilter }`, or
 * `app.useGlobalFilters(new DatabaseErrorFilter())`, after any catch-all filter of its own), or a
 * controller or gateway with `@UseFilters(DatabaseErrorFilter)` (the package README).
 */
@Catch(DatabaseError)
export class DatabaseErrorFilter implements ExceptionFilter<DatabaseError> {
  private readonly logger = new Logger(DatabaseErrorFilter.name);

  catch(exception: DatabaseError, host: ArgumentsHost): Observable<never> | void {
    let answer = databaseErrorAnswer(exception);
    if (answer === undefined) {
      this.logger.error({ err: exception }, 'database error without an answer');
      answer = INTERNAL;
    }
    const { status, body, retryAfterSecs } = answer;
    switch (host.getType()) {
      case 'http': {
        const reply = host.switchToHttp().getResponse<HttpReply>();
        if (retryAfterSecs !== undefined) reply.header('retry-after', String(retryAfterSecs));
        reply.header('content-type', 'application/json');
        reply.status(status);
        reply.send(JSON.stringify(body));
        return;
      }
      case 'ws': {
        const client = host.switchToWs().getClient<WsClient>();
        const data = { status: 'error', message: body.error, code: status, ...(retryAfterSecs !== undefined ? { retryAfterSecs } : {}) };
        if (typeof client.send === 'function') client.send(JSON.stringify({ event: 'exception', data }));
        else client.emit?.('exception', data);
        return;
      }
      default:
        return throwError(() => ({ status, message: body.error, ...(retryAfterSecs !== undefined ? { retryAfterSecs } : {}) }));
    }
  }
}
