import { ArgumentsHost, Catch, ExceptionFilter, HttpException } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { HttpError } from '../common/http-error.js';
import { annotateRequest, type RequestAnnotations } from '../common/request-annotations.js';
import { classifyDbError } from '../database/pg-errors.js';

/**
 * The one place HTTP statuses and bodies are decided for failures:
 * a statement deadline is a terminal 503 `query timed out`; an unavailable
 * database (pool timeout, shed read, closed pool, socket failure) a retryable
 * 503 `database unavailable`; anything else a 500 whose cause is only logged, as the `err` of
 * the request's one log line (HttpObserver).
 */
@Catch()
export class DatabaseErrorFilter implements ExceptionFilter {
  catch(exception: unknown, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    const reply = http.getResponse<FastifyReply>();
    const [status, body] = this.map(exception);
    annotateRequest(http.getRequest<FastifyRequest>(), logFields(exception, status, body));
    void reply.status(status).header('content-type', 'application/json').send(JSON.stringify(body));
  }

  private map(exception: unknown): [number, Record<string, unknown>] {
    if (exception instanceof HttpError) return [exception.status, exception.body ?? { error: exception.message }];
    if (exception instanceof HttpException) {
      const status = exception.getStatus();
      return [status, { error: status === 404 ? 'not found' : exception.message }];
    }
    const failure = classifyDbError(exception);
    if (failure === 'timeout') return [503, { error: 'query timed out' }];
    if (failure === 'unavailable') return [503, { error: 'database unavailable' }];
    return [500, { error: 'internal server error' }];
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
