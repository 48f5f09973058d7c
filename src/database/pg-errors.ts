/**
 * Classifies database failures once, for every transport: a statement deadline
 * is terminal, an unavailable database is retryable, anything else is internal.
 */
export type DbFailure = 'timeout' | 'unavailable' | 'internal';

const UNAVAILABLE_MESSAGES = [
  'timeout exceeded when trying to connect',
  'Connection terminated',
  'Connection terminated due to connection timeout',
  'Query read timeout',
  'Cannot use a pool after calling end on the pool',
  'Client was closed and is not queryable',
  'Client has encountered a connection error and is not queryable',
  'connection is closed',
];

const UNAVAILABLE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);

export function classifyDbError(err: unknown): DbFailure {
  const e = err as { code?: unknown; message?: unknown } | null;
  const code = typeof e?.code === 'string' ? e.code : undefined;
  const message = typeof e?.message === 'string' ? e.message : '';
  if (code === '57014') return 'timeout';
  if (code && UNAVAILABLE_CODES.has(code)) return 'unavailable';
  // 57P01..57P03: admin shutdown / crash shutdown / cannot connect now; 08xxx: connection exceptions.
  if (code && (/^57P0[1-3]$/.test(code) || code.startsWith('08') || code === '53300')) return 'unavailable';
  // 55000 at connect: the database refuses connections (maintenance, failover in progress).
  if (code === '55000' && message.includes('not currently accepting connections')) return 'unavailable';
  if (UNAVAILABLE_MESSAGES.some((m) => message.includes(m))) return 'unavailable';
  // A shed history read (HistoryReadRejected, seed 000) is a pool timeout: retryable, never the terminal timeout.
  if ((err as { name?: string })?.name === 'PoolTimeoutError') return 'unavailable';
  return 'internal';
}

/** The CLOSED reason a failed history read ends with. */
export function closedReasonFor(err: unknown): string {
  return classifyDbError(err) === 'timeout' ? 'error: query timed out' : 'error: database error';
}
