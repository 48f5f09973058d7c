import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { databaseErrorAnswer, LockTimedOutError, OwnWordingFailure, PoolTimeoutError, QueryTimedOutError, ReadShareExceededError } from '@buzz-relay/read-path';
import { HttpError } from './http-error.js';
import { annotateRequest, isObserved, type RequestAnnotations } from './request-annotations.js';

interface Answer {
  readonly status: number;
  readonly body: Record<string, unknown>;
  readonly retryAfterSecs?: number;
}

const INTERNAL: Answer = { status: 500, body: { error: 'internal server error' } };

/**
 * The relay's one HTTP exception filter (relay.md §3.10), bound by the relay's root module, never
 * by a library module: every failure of an HTTP route is answered here, by type, as `{"error": …}`.
 *
 * - the database layer's typed errors take the library's answers (databaseErrorAnswer: 503
 *   `query timed out`, 503 `database unavailable` and 429 for a key's read share, with
 *   `Retry-After` where a retry may succeed);
 * - a relay-decided HttpError its own status, body and `Retry-After`; Nest's HttpException its
 *   status with its message (a 404 as `not found`);
 * - a path with its own wording (OwnWordingFailure, the thread window of §3.6b): a deadline, lock
 *   or pool timeout is a 503 in its words;
 * - anything else a 500 whose cause is only logged: as the `err` of the request's one log line
 *   where the relay's HTTP observer runs, else through Nest's logger.
 */
@Catch()
export class HttpErrorFilter implements ExceptionFilter {
  private readonly logger = new Logger('HttpBridge');

  catch(exception: unknown, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    const reply = http.getResponse<FastifyReply>();
    const req = http.getRequest<FastifyRequest>();
    const { status, body, retryAfterSecs } = this.answer(exception);
    if (isObserved(req)) annotateRequest(req, logFields(exception, status, body));
    else if (status === 500) this.logger.error({ err: exception }, 'internal error');
    if (retryAfterSecs !== undefined) void reply.header('retry-after', String(retryAfterSecs));
    void reply.status(status).header('content-type', 'application/json').send(JSON.stringify(body));
  }

  /** The status, body and `Retry-After` for `exception`. */
  answer(exception: unknown): Answer {
    if (exception instanceof OwnWordingFailure) return this.inOwnWords(exception);
    if (exception instanceof HttpError) return { status: exception.status, body: exception.body ?? { error: exception.message }, retryAfterSecs: exception.retryAfterSecs };
    if (exception instanceof HttpException) {
      const status = exception.getStatus();
      return { status, body: { error: status === 404 ? 'not found' : exception.message } };
    }
    return databaseErrorAnswer(exception) ?? INTERNAL;
  }

  /** §3.6b: a deadline, lock or pool timeout is a 503 in the path's words; anything else a 500. */
  private inOwnWords(failure: OwnWordingFailure): Answer {
    const cause = failure.cause;
    if (cause instanceof HttpError || cause instanceof ReadShareExceededError) return this.answer(cause);
    if (cause instanceof QueryTimedOutError || cause instanceof LockTimedOutError || cause instanceof PoolTimeoutError) return { status: 503, body: { error: failure.wording.timedOut } };
    return INTERNAL;
  }
}

/**
 * A 500 logs its cause. Other failures log their `error` text as the `reason`, truncated to 256
 * bytes (relay.md §3.1 step 8), except a 400's: it may quote the request (a JSON parse error, an
 * unknown field), and attacker-controlled text is never logged.
 */
function logFields(exception: unknown, status: number, body: Record<string, unknown>): RequestAnnotations {
  if (status === 500) return { reason: 'internal error', err: exception };
  if (status === 400 || typeof body.error !== 'string') return {};
  return { reason: Buffer.from(body.error).subarray(0, 256).toString() };
}
