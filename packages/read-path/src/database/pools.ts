/**
 * Pool construction. Every serving writer pool is built by createWriterPool and
 * runs the one after-connect hook; the reader pool is lazy and has no hook. (The
 * fence-probe pool, the deliberate exception to the writer rule, is built by the
 * replica fence: replica-fence/probe-pool.ts.)
 */
import { Client, ClientBase, Pool, PoolConfig } from 'pg';
import type { PoolSettings } from './database.options.js';
import { CREATED_AT_FLOOR_SECS } from './constants.js';
import { noteSessionStatementTimeout } from './read-deadline.js';
import { ClientClass, statementCachingClient } from './statement-cache.js';
import { ConnectionStep, ConnectionSteps } from './connection-steps.js';

export const WRITER_POOL_MIN = 2;
export const WRITER_ACQUIRE_TIMEOUT_MS = 3000;
export const POOL_MAX_LIFETIME_SECS = 1800;
export const POOL_IDLE_TIMEOUT_MS = 600_000;
/** The search pool's sessions, as `pg_stat_activity` shows them on whichever server it uses. */
export const SEARCH_APPLICATION_NAME = 'buzz-relay-search';
/** How long a read waits for a reader connection (ReaderPool.acquire). */
export const READER_ACQUIRE_TIMEOUT_MS = 150;
/**
 * How long one reader dial may take. pg-pool ends a dial at its `connectionTimeoutMillis`, so
 * with the 150 ms acquire budget there a replica busy accepting (a reconnect storm opening every
 * connection at once) never finished a dial: the pool could not grow and history reads fell to
 * the writer as if the replica were down. Dials now run to this bound in the background while the
 * read that started them gives up at the acquire budget.
 */
export const READER_DIAL_TIMEOUT_MS = 2000;
/**
 * Writer sessions, reader transactions and search sessions run with `jit = off` (the writer's set
 * in its after-connect hook, the reader's in each proof's first statement, routing/reader-tx.ts,
 * search's in its startup packet beside its other settings). A generic plan's cost estimate for a
 * filter with many tag values passes `jit_above_cost`, and the server then compiled the plan's
 * expressions on every execution (JIT code is not kept between executions): 0.52 s of a 0.56 s
 * history page over 5,000 rows, 32 ms without. The relay's statements are short reads and writes
 * that JIT does not pay back.
 */
export const NO_JIT = '-c jit=off';

/** Tighten-only, transaction-local statement deadline of every reader transaction (design choice, §2.1). */
export const READER_STATEMENT_TIMEOUT_MS = 20_000;
/** Client-side guard against a stalled replica socket: the server deadline plus a margin. */
export const READER_CLIENT_TIMEOUT_MS = READER_STATEMENT_TIMEOUT_MS + 1000;

export type PoolErrorSink = (role: string, err: Error) => void;

/**
 * The writer's after-connect hook, in the spec's order: arm the floor guard,
 * install the session timeouts, then refuse any isolation level but READ COMMITTED.
 */
export async function prepareWriterSession(client: ClientBase, cfg: PoolSettings, steps?: ConnectionSteps): Promise<void> {
  const step = <T>(name: ConnectionStep, fn: () => Promise<T>): Promise<T> => (steps ? steps.run(name, fn) : fn());
  await step('created_at_floor', () => client.query(`select set_config('buzz.created_at_floor', $1, false)`, [String(CREATED_AT_FLOOR_SECS)]));
  await step('session_timeouts', () =>
    client.query(
      `select set_config('lock_timeout', $1, false),
              set_config('idle_in_transaction_session_timeout', $2, false),
              set_config('statement_timeout', $3, false),
              set_config('jit', 'off', false)`,
      [String(cfg.lockTimeoutMs), String(cfg.idleTxnTimeoutMs), String(cfg.statementTimeoutMs)],
    ),
  );
  noteSessionStatementTimeout(client, cfg.statementTimeoutMs);
  await step('isolation', async () => {
    const { rows } = await client.query<{ iso: string }>(`select current_setting('transaction_isolation') as iso`);
    if (rows[0]?.iso !== 'read committed') {
      throw new Error(`buzz-relay requires READ COMMITTED as the default isolation, server has ${rows[0]?.iso}`);
    }
  });
}

/** `steps` records each step of opening a writer connection (database.md §6.6). */
export function createWriterPool(cfg: PoolSettings, url: string, onError: PoolErrorSink, steps?: ConnectionSteps): Pool {
  const base = statementCachingClient(cfg.statementCacheSize);
  const options: PoolConfig = {
    connectionString: url,
    application_name: 'buzz-relay',
    max: cfg.poolSize,
    min: Math.min(WRITER_POOL_MIN, cfg.poolSize),
    connectionTimeoutMillis: WRITER_ACQUIRE_TIMEOUT_MS,
    idleTimeoutMillis: POOL_IDLE_TIMEOUT_MS,
    maxLifetimeSeconds: POOL_MAX_LIFETIME_SECS,
    onConnect: (client) => (steps ? steps.run('ready', () => prepareWriterSession(client, cfg, steps)) : prepareWriterSession(client, cfg)),
    Client: steps ? timedConnectClient(base, steps, WRITER_ACQUIRE_TIMEOUT_MS) : base,
  };
  return withErrorListener(new Pool(options), 'writer', onError);
}

/**
 * The pool's client class with its dial recorded as `physical_connect`. pg-pool ends a dial that
 * outlives `connectTimeoutMs` by destroying its socket, so a failure at or past that bound is a
 * timeout rather than a refusal.
 */
function timedConnectClient(Base: ClientClass, steps: ConnectionSteps, connectTimeoutMs: number): ClientClass {
  const timedOut = (_err: unknown, elapsedMs: number) => elapsedMs >= connectTimeoutMs - 5;
  class TimedConnectClient extends Base {}
  const dial = Base.prototype.connect as unknown as (this: Client) => Promise<unknown>;
  // pg's connect() is overloaded (promise or callback); pg-pool uses the callback form.
  (TimedConnectClient.prototype as unknown as { connect: unknown }).connect = function (this: Client, callback?: (err: Error | null, c?: Client) => void) {
    const done = steps.run('physical_connect', () => dial.call(this), timedOut);
    if (!callback) return done.then(() => this);
    done.then(
      () => callback(null, this),
      (err: Error) => callback(err),
    );
    return undefined;
  };
  return TimedConnectClient;
}

export function createReaderPool(cfg: PoolSettings, url: string, onError: PoolErrorSink): Pool {
  const pool = new Pool({
    connectionString: url,
    application_name: 'buzz-relay-reader',
    max: cfg.readPoolSize,
    min: 0,
    connectionTimeoutMillis: READER_DIAL_TIMEOUT_MS,
    idleTimeoutMillis: POOL_IDLE_TIMEOUT_MS,
    maxLifetimeSeconds: POOL_MAX_LIFETIME_SECS,
    query_timeout: READER_CLIENT_TIMEOUT_MS,
    Client: statementCachingClient(cfg.statementCacheSize),
  });
  return withErrorListener(pool, 'reader', onError);
}

/**
 * The NIP-50 search pool (database.md §2.1): matching only, ids and ranks, never fenced. It
 * prefers the replica and falls back to the writer's URL when no replica is configured; either
 * way it is its own bounded pool, so a burst of searches never takes a serving writer
 * connection. Lazy like the reader (a replica that is down at boot cannot stop start-up). Every
 * session is read-only and carries the client-read statement deadline from its startup packet,
 * so no hook runs on connect; the client-side timer guards a stalled socket.
 */
export function createSearchPool(cfg: PoolSettings, url: string, onError: PoolErrorSink): Pool {
  const session = [`-c default_transaction_read_only=on`, `-c statement_timeout=${cfg.searchStatementTimeoutMs}`, NO_JIT].join(' ');
  const pool = new Pool({
    connectionString: url,
    application_name: SEARCH_APPLICATION_NAME,
    max: cfg.searchPoolSize,
    min: 0,
    connectionTimeoutMillis: READER_DIAL_TIMEOUT_MS,
    idleTimeoutMillis: POOL_IDLE_TIMEOUT_MS,
    maxLifetimeSeconds: POOL_MAX_LIFETIME_SECS,
    options: session,
    query_timeout: cfg.searchStatementTimeoutMs + 1000,
    Client: statementCachingClient(cfg.statementCacheSize),
  });
  return withErrorListener(pool, 'search', onError);
}

/** The message of an acquire that ran out of time (pg-pool's own, and ReaderPool.acquire's). */
export const ACQUIRE_TIMEOUT_MESSAGE = 'timeout exceeded when trying to connect';

/**
 * Whether a failed pool checkout says the server did not take a connection: a dial refused,
 * reset, failed or timed out. pg-pool's waiting-for-a-free-connection timeout is not one.
 */
export function isDialFailure(err: unknown): boolean {
  const msg = (err as { message?: unknown } | null)?.message;
  return !(typeof msg === 'string' && msg.includes(ACQUIRE_TIMEOUT_MESSAGE));
}

/**
 * A pool without an 'error' listener crashes the process when its server restarts. Clients
 * need one too: pg-pool removes its idle listener while a client is checked out, and a server
 * that terminates a checked-out session (admin shutdown, the idle-in-transaction reaper, a
 * replica restart mid-request) makes the client emit 'error', which unhandled would crash the
 * process. The permanent client listener swallows it: an idle client's error still reaches the
 * pool listener below, and a checked-out client refuses its next query, which the caller sees.
 */
export function withErrorListener(pool: Pool, role: string, onError: PoolErrorSink): Pool {
  pool.on('error', (err) => onError(role, err));
  pool.on('connect', (client) => client.on('error', () => undefined));
  return pool;
}

/** pool.end() never resolves against a frozen server; give up after a bound. */
export async function endPool(pool: Pool, timeoutMs = 5000): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), timeoutMs);
    timer.unref();
  });
  const ended = pool.end().then(
    () => true,
    () => true,
  );
  const result = await Promise.race([ended, timedOut]);
  clearTimeout(timer);
  return result;
}
