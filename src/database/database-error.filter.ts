import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { HttpError } from '../common/http-error.js';
import { DatabaseUnavailableError, LockTimedOutError, OwnWordingFailure, PoolTimeoutError, QueryTimedOutError } from './database-errors.js';

type Answer = [status: number, body: Record<string, unknown>];

const INTERNAL: Answer = [500, { error: 'internal server error' }];

/**
 * The one place HTTP statuses and bodies are decided for failures (relay.md §3.10), by type:
 * a statement deadline (QueryTimedOutError) is the terminal 503 `query timed out`; an unavailable
 * database (DatabaseUnavailableError: pool timeout, shed read, closed pool, socket failure) the
 * retryable 503 `database unavailable`; a relay-decided HttpError its own answer; anything else a
 * 500 whose cause is only logged. A path with its own wording (OwnWordingFailure, the thread
 * window of §3.6b) is decided here too, with its words.
 *
 * DatabaseModule provides it as the application's filter (APP_FILTER), so an importer of the
 * module gets the same answers; it is exported for an importer that binds filters itself.
 */
@Catch()
export class DatabaseErrorFilter implements ExceptionFilter {
  private readonly logger = new Logger('HttpBridge');

  catch(exception: unknown, host: ArgumentsHost): void {
    const reply = host.switchToHttp().getResponse<FastifyReply>();
    const [status, body] = this.answer(exception);
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
    if (exception instanceof QueryTimedOutError) return [503, { error: 'query timed out' }];
    if (exception instanceof DatabaseUnavailableError) return [503, { error: 'database unavailable' }];
    return this.internal(exception);
  }

  /** §3.6b: a deadline, lock or pool timeout is a 503 in the path's words; anything else a 500. */
  private inOwnWords(failure: OwnWordingFailure): Answer {
    const cause = failure.cause;
    if (cause instanceof HttpError) return this.answer(cause);
    if (cause instanceof QueryTimedOutError || cause instanceof LockTimedOutError || cause instanceof PoolTimeoutError) return [503, { error: failure.wording.timedOut }];
    return this.internal(cause);
  }

  private internal(exception: unknown): Answer {
    this.logger.error({ err: (exception as Error)?.message, stack: (exception as Error)?.stack }, 'internal error');
    return INTERNAL;
  }
}
