import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { HttpError } from '../common/http-error.js';
import { classifyDbError } from '../database/pg-errors.js';

/**
 * The one place HTTP statuses and bodies are decided for failures:
 * a statement deadline is a terminal 503 `query timed out`; an unavailable
 * database (pool timeout, shed read, closed pool, socket failure) a retryable
 * 503 `database unavailable`; anything else a 500 whose cause is only logged.
 */
@Catch()
export class DatabaseErrorFilter implements ExceptionFilter {
  private readonly logger = new Logger('HttpBridge');

  catch(exception: unknown, host: ArgumentsHost): void {
    const reply = host.switchToHttp().getResponse<FastifyReply>();
    const [status, body] = this.map(exception);
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
    this.logger.error({ err: (exception as Error)?.message, stack: (exception as Error)?.stack }, 'internal error');
    return [500, { error: 'internal server error' }];
  }
}
