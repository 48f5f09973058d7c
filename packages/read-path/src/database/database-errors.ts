/**
 * The database layer's failures as types (database.md §2.8 "What callers see"). A driver or
 * routing failure is turned into one of these once, where it leaves the pools or the
 * RoutedReader (toDatabaseError), and everything above matches them with `instanceof`: the
 * layer's answers (DatabaseErrorFilter, databaseErrorAnswer), the WebSocket reasons (subscriptions/ws-reasons.ts), the
 * routing rules that surface a deadline instead of re-running it on the writer.
 *
 *   DatabaseError
 *   ├─ QueryTimedOutError          a statement hit its deadline (SQLSTATE 57014): terminal
 *   ├─ LockTimedOutError           a lock wait hit lock_timeout (55P03)
 *   ├─ ReadShareExceededError      the read's tenant already held its share of a read gate
 *   └─ DatabaseUnavailableError    socket/I-O failure, closed pool, server going away: retryable
 *      └─ PoolTimeoutError         no connection within the acquire budget
 *         ├─ HistoryReadRejectedError   a history read shed (seed 000)
 *         └─ WriterReadRejectedError    the writer-read cap stayed full
 *
 * Any other driver error (a constraint violation, a syntax error) is left as it is, SQLSTATE and
 * all: callers that check `code` (unique violations, serialization failures) keep working, and
 * the transports answer it as internal.
 */

export interface DatabaseErrorOptions {
  /** The driver's error this one stands for. */
  readonly cause?: unknown;
  /** Its SQLSTATE or socket code, when it had one. */
  readonly code?: string;
}

export abstract class DatabaseError extends Error {
  /** The driver's SQLSTATE or socket code, kept so logs and `code` checks still see it. */
  readonly code: string | undefined;

  constructor(message: string, options: DatabaseErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = options.code;
  }
}

/** A statement cancelled by its deadline (SQLSTATE 57014). Terminal: `query timed out` (seed 002). */
export class QueryTimedOutError extends DatabaseError {}

/** A lock wait cancelled by `lock_timeout` (SQLSTATE 55P03). */
export class LockTimedOutError extends DatabaseError {}

/** The database could not serve the request; the client may retry (seed 000). */
export class DatabaseUnavailableError extends DatabaseError {}

/** No connection within the pool's acquire budget. */
export class PoolTimeoutError extends DatabaseUnavailableError {}

export type HistoryRejectReason = 'history_read_cap' | 'reader_acquire_timeout';

/** Seed 000: a history read shed by the per-pod cap or on a saturated reader, never spilled onto the writer. */
export class HistoryReadRejectedError extends PoolTimeoutError {
  constructor(readonly reason: HistoryRejectReason) {
    super(`history read rejected: ${reason}`);
  }
}

/** A client-driven read refused a writer connection: the writer-read cap (BUZZ_DB_WRITER_READ_CAP) stayed full. */
export class WriterReadRejectedError extends PoolTimeoutError {
  constructor() {
    super('writer read rejected: writer_read_cap');
  }
}

/** The read gates whose permits are shared between tenants (common/permit-gate.ts). */
export type SharedReadGate = 'writer_reads' | 'writer_heavy_reads' | 'history_reads' | 'history_heavy_reads' | 'search';

/**
 * A read refused because its tenant (the client's key) held its whole share of a read gate for
 * the gate's wait: the client's own reads were what it waited behind, so the client should slow
 * down. Not a DatabaseUnavailableError: the database was not the limit, this tenant was.
 */
export class ReadShareExceededError extends DatabaseError {
  constructor(readonly gate: SharedReadGate) {
    super(`read refused: tenant over its share of ${gate}`);
  }
}

/**
 * A failure of a read path that answers HTTP in its own words (relay.md §3.6b: the thread window
 * keeps its strings). The path wraps whatever it caught, unchanged, and gives its wording; the
 * one filter still decides by the cause's type which answer applies: a deadline, a lock timeout
 * or a pool timeout (a shed read included) is a 503 with `timedOut`, an HttpError passes, and
 * anything else, an unavailable database included, is a 500.
 */
export class OwnWordingFailure extends Error {
  constructor(
    override readonly cause: unknown,
    readonly wording: { readonly timedOut: string },
  ) {
    super(cause instanceof Error ? cause.message : String(cause));
    this.name = 'OwnWordingFailure';
  }
}

/** pg-pool's acquire timeouts (no SQLSTATE), and ReaderPool.acquire's own. */
const POOL_TIMEOUT_MESSAGES = ['timeout exceeded when trying to connect', 'Connection terminated due to connection timeout'];

/** pg and pg-pool say these in words only: the connection or the pool is gone. */
const UNAVAILABLE_MESSAGES = [
  'Connection terminated',
  'Query read timeout',
  'Cannot use a pool after calling end on the pool',
  'Client was closed and is not queryable',
  'Client has encountered a connection error and is not queryable',
  'connection is closed',
];

const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);

/** 57P01..57P03 (shutdown, cannot connect now), class 08 (connection exception), 53300 (too many connections). */
function unavailableCode(code: string, message: string): boolean {
  if (SOCKET_CODES.has(code) || /^57P0[1-3]$/.test(code) || code.startsWith('08') || code === '53300') return true;
  // 55000 at connect: the database refuses connections (maintenance, failover in progress).
  return code === '55000' && message.includes('not currently accepting connections');
}

/**
 * The boundary: the typed error a driver failure stands for, or the failure itself when it is
 * none of them (or already typed). The only place that reads driver codes and texts.
 */
export function toDatabaseError(err: unknown): unknown {
  if (err instanceof DatabaseError || err === null || typeof err !== 'object') return err;
  const e = err as { code?: unknown; message?: unknown };
  const code = typeof e.code === 'string' ? e.code : undefined;
  const message = typeof e.message === 'string' ? e.message : '';
  const options = { cause: err, code };
  if (code === '57014') return new QueryTimedOutError(message, options);
  if (code === '55P03') return new LockTimedOutError(message, options);
  if (code !== undefined && unavailableCode(code, message)) return new DatabaseUnavailableError(message, options);
  if (POOL_TIMEOUT_MESSAGES.some((m) => message.includes(m))) return new PoolTimeoutError(message, options);
  if (UNAVAILABLE_MESSAGES.some((m) => message.includes(m))) return new DatabaseUnavailableError(message, options);
  return err;
}

/** Runs `work` and rethrows its failure as the typed error it stands for. */
export async function typedFailures<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    throw toDatabaseError(err);
  }
}
