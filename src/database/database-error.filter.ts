import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { HttpError } from '../common/http-error.js';
import { annotateRequest, isObserved, type RequestAnnotations } from '../common/request-annotations.js';
import { DatabaseUnavailableError, LockTimedOutError, OwnWordingFailure, PoolTimeoutError, QueryTimedOutError, ReadShareExceededError } from './database-errors.js';

type Answer = [status: number, body: Record<string, unknown>];

const INTERNAL: Answer = [500, { error: 'internal server error' }];
/** A read refused for its key's share of a read gate: the client should slow down. */
export const READ_SHARE_ANSWER: Answer = [429, { error: 'rate-limited: too many concurrent reads for this key' }];
/** Seconds a 429 for a key's share asks the client to wait. */
const READ_SHARE_RETRY_AFTER_SECS = '1';

/**
 * The one place HTTP statuses and bodies are decided for failures (relay.md §3.10), by type:
 * a statement deadline (QueryTimedOutError) is the terminal 503 `query timed out`; an unavailable
 * database (DatabaseUnavailableError: pool timeout, shed read, closed pool, socket failure) the
 * retryable 503 `database unavailable`; a read refused for its key's share (ReadShareExceededError)
 * a 429 with `Retry-After`; a relay-decided HttpError its own answer; anything else a
 * 500 whose cause is only logged: as the `err` of the request's one log line where the relay's
 * HTTP observer runs, else (an importer's app) through Nest's logger. A path with its own wording (OwnWordingFailure, the thread
 * window of §3.6b) is decided here too, with its words.
 *
 * DatabaseModule provides it as the application's filter (APP_FILTER), so an importer of the
 * module gets the same answers; it is exported for an importer that binds filters itself.
 */
@Catch()
export class DatabaseErrorFilter implements ExceptionFilter {
  private readonly logger = new Logger('HttpBridge');

  catch(exception: unknown, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    const reply = http.getResponse<FastifyReply>();
    const req = http.getRequest<FastifyRequest>();
    const [status, body] = this.answer(exception);
    if (isObserved(req)) annotateRequest(req, logFields(exception, status, body));
    else if (status === 500) this.logger.error({ err: exception }, 'internal error');
    if (status === READ_SHARE_ANSWER[0] && body === READ_SHARE_ANSWER[1]) void reply.header('retry-after', READ_SHARE_RETRY_AFTER_SECS);
    else if (exception instanceof HttpError && exception.retryAfterSecs !== undefined) void reply.header('retry-after', String(exception.retryAfterSecs));
    void reply.status(status).header('content-type', 'application/json').send(JSON.stringify(body));
  }

  /** The status and body for `exception`. */
  answer(exception: unknown): Answer {
    if (exception instanceof OwnWordingFailure) return this.inOwnWords(exception);
    if (exception instanceof HttpError) return [exception.status, exception.body ?? { error: exception.message }];
    if (exception instanceof HttpException) {
      const status = exception.getStatus();
      return [status, { error: status === 404 ? 'not found' : exception.message }];
    }
    if (exception instanceof ReadShareExceededError) return READ_SHARE_ANSWER;
    if (exception instanceof QueryTimedOutError) return [503, { error: 'query timed out' }];
    if (exception instanceof DatabaseUnavailableError) return [503, { error: 'database unavailable' }];
    return INTERNAL;
  }

  /** §3.6b: a deadline, lock or pool timeout is a 503 in the path's words; anything else a 500. */
  private inOwnWords(failure: OwnWordingFailure): Answer {
    const cause = failure.cause;
    if (cause instanceof HttpError || cause instanceof ReadShareExceededError) return this.answer(cause);
    if (cause instanceof QueryTimedOutError || cause instanceof LockTimedOutError || cause instanceof PoolTimeoutError) return [503, { error: failure.wording.timedOut }];
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
