/**
 * The proved reader transaction (database.md §2.5): one reader checkout, BEGIN REPEATABLE READ
 * READ ONLY, the heartbeat read as the first statement (it anchors the snapshot every later
 * statement of the request sees), resolution against the proof ring, then a tighten-only
 * transaction-local statement deadline (design choice §2.1).
 */
import { cancelOnAbort } from '../database/cancel-request.js';
import { Logger } from '@nestjs/common';
import { Kysely, KyselyPlugin, PluginTransformQueryArgs, PluginTransformResultArgs, QueryResult, RootOperationNode, UnknownRow } from 'kysely';
import { PoolClient } from 'pg';
import { ReaderPool } from '../database/reader-pool.js';
import { DB } from '../database/database.types.js';
import { PoolTimeoutError } from '../database/database-errors.js';
import { READER_STATEMENT_TIMEOUT_MS } from '../database/pools.js';
import { namesStatements } from '../database/statement-cache.js';
import type { HistoryPermit } from '../history-reads/history-read-gate.js';
import type { ReaderPoolOperation } from '../metrics/database-metrics.service.js';
import { ProofEntry, ProofRing } from '../replica-fence/proof-ring.js';
import { kyselyOn } from '../database/kysely-on-client.js';

/** Steps 2–4 must finish within this (design choice): a reader that cannot prove in time is wrong, not busy. */
export const PROOF_DEADLINE_MS = 500;

/** Seed 000: the release check (ROLLBACK before the connection is idle again) is bounded; past it the connection is closed. */
export const READER_RELEASE_CHECK_MS = 5000;

export type ProofFailure = 'reader_acquire_timeout' | 'reader_validation_error' | 'reader_token_behind' | 'reader_proof_timeout';

/** Use of a reader transaction (or a ReadSession) after it was released. */
export class ReadAfterReleaseError extends Error {
  constructor(what: string) {
    super(`${what} was used after it was released: its connection, snapshot and history permit are gone; run every query of the read before releasing it`);
    this.name = 'ReadAfterReleaseError';
  }
}

/**
 * Refuses, at compile time of each query, every query of a handle whose transaction was
 * released: the connection may already serve someone else's transaction. Plugins run for
 * builder and `sql` template queries alike.
 */
class ReleaseGuard implements KyselyPlugin {
  constructor(private readonly tx: ReaderTx) {}

  transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
    if (this.tx.isReleased()) throw new ReadAfterReleaseError('a reader transaction');
    return args.node;
  }

  transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    return Promise.resolve(args.result);
  }
}

/**
 * One proved reader transaction. It owns the connection, the proof entry and, for a history
 * read, the history permit (seed 000): releasing it releases all three, so a permit can never
 * outlive the transaction it admitted nor be dropped while the transaction still runs. Its `db`
 * refuses queries once it is released (ReadAfterReleaseError), and `await using` releases it.
 * RoutedReader alone opens one; callers see it through a ReadSession.
 */
export class ReaderTx implements AsyncDisposable {
  /** The transaction's queries; refused after release. */
  readonly db: Kysely<DB>;
  private released = false;
  /** Settles when the connection is back in the pool (or destroyed). */
  private returned: Promise<void> = Promise.resolve();

  constructor(
    private readonly client: PoolClient,
    readonly entry: ProofEntry,
    readonly backend: string,
    private readonly permit?: HistoryPermit,
  ) {
    // A plugin on the connection's cached handle: no new dialect or driver per transaction.
    this.db = kyselyOn(client).withPlugin(new ReleaseGuard(this));
  }

  isReleased(): boolean {
    return this.released;
  }

  /** See cancelOnAbort: a transaction whose statement was cancelled is released as failed. */
  cancelOnAbort(signal: AbortSignal | undefined): { dispose(): boolean } {
    return cancelOnAbort(this.client, signal);
  }

  /**
   * Rolls back and returns the connection (a failed session's connection is destroyed
   * instead), and releases the history permit. The connection returns asynchronously through
   * the release check, bounded at READER_RELEASE_CHECK_MS; the permit is released at once: the
   * cap bounds history transactions, not connections (§3.4). Idempotent.
   */
  release(failed = false): void {
    if (this.released) return;
    this.released = true;
    this.permit?.release();
    if (failed) {
      this.client.release(new Error('replica session failed'));
      return;
    }
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise<Error>((resolve) => {
      timer = setTimeout(() => resolve(new Error('reader release check timed out')), READER_RELEASE_CHECK_MS);
      timer.unref();
    });
    const rollback = this.client.query('ROLLBACK').then(
      () => undefined,
      (err: Error) => err,
    );
    this.returned = Promise.race([rollback, bound]).then((err) => {
      clearTimeout(timer);
      this.client.release(err);
    });
  }

  /** `await using`: releases, and resolves once the connection is back in the pool. */
  [Symbol.asyncDispose](): Promise<void> {
    this.release();
    return this.returned;
  }
}

const logger = new Logger('RoutedReader');

/** Per-process Aurora capability answer, cached after the first definitive one. */
export class AuroraIdentityCache {
  private supported: boolean | undefined;

  /**
   * Asks the catalog whether the function exists rather than calling it: on vanilla Postgres a
   * call is an undefined-function ERROR in the server's log on every start. Runs outside the
   * request transaction; a failure is not cached (the next checkout asks again).
   */
  async probe(client: PoolClient): Promise<boolean> {
    if (this.supported !== undefined) return this.supported;
    try {
      const { rows } = await client.query<{ aurora: boolean }>(`select to_regprocedure('aurora_db_instance_identifier()') is not null as aurora`);
      this.supported = rows[0]?.aurora === true;
      return this.supported;
    } catch {
      return false;
    }
  }
}

export async function openProvedReader(
  readers: ReaderPool,
  ring: ProofRing,
  aurora: AuroraIdentityCache,
  operation: ReaderPoolOperation,
  permit?: HistoryPermit,
  genericPlan = false,
): Promise<ReaderTx | ProofFailure> {
  let client: PoolClient;
  try {
    client = await readers.acquire(operation);
  } catch (err) {
    return err instanceof PoolTimeoutError ? 'reader_acquire_timeout' : 'reader_validation_error';
  }
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<'reader_proof_timeout'>((resolve) => {
    timer = setTimeout(() => resolve('reader_proof_timeout'), PROOF_DEADLINE_MS);
  });
  const proof = prove(client, ring, aurora, permit, genericPlan);
  proof.catch(() => undefined);
  const outcome = await Promise.race([proof, deadline]);
  clearTimeout(timer);
  if (outcome instanceof ReaderTx) return outcome;
  // The connection may be mid-statement or inside an aborted transaction: never pool it again.
  client.release(new Error(`reader proof failed: ${outcome}`));
  return outcome;
}

/**
 * Session `statement_timeout` of each pooled reader connection, read once per connection:
 * `pg_settings` materialises every setting (about 0.5 ms of replica CPU), and nothing in the
 * relay changes a reader session's own value, only transaction-local ones.
 */
const sessionStatementTimeouts = new WeakMap<PoolClient, number>();

/** The tighten-only deadline for this connection: the session value if set and tighter, else 20 s. */
async function readerDeadlineMs(client: PoolClient): Promise<number> {
  let session = sessionStatementTimeouts.get(client);
  if (session === undefined) {
    const { rows } = await client.query<{ ms: string }>(`select setting as ms from pg_settings where name = 'statement_timeout'`);
    session = Number(rows[0]?.ms);
    if (!Number.isSafeInteger(session) || session < 0) throw new Error(`unexpected statement_timeout setting ${rows[0]?.ms}`);
    sessionStatementTimeouts.set(client, session);
  }
  return session === 0 || session > READER_STATEMENT_TIMEOUT_MS ? READER_STATEMENT_TIMEOUT_MS : session;
}

/**
 * The proof's heartbeat read, given its two arguments as SQL: the deadline in ms (text) and
 * whether to set the generic plan mode (boolean). It also turns JIT off for the transaction
 * (database/pools.ts NO_JIT says why), here rather than in the startup packet, which a pooler
 * may refuse and which a URL's own `options` replaces.
 */
function heartbeatRead(isAurora: boolean, deadline: string, generic: string): string {
  const identity = isAurora ? `aurora_db_instance_identifier() || ' @ ' || ` : '';
  return `select token::text as token, epoch::text as epoch,
                 ${identity}coalesce(host(inet_server_addr()) || ':' || inet_server_port(), 'local') || ' pid=' || pg_backend_pid() as backend,
                 set_config('statement_timeout', ${deadline}, true) as deadline,
                 set_config('jit', 'off', true) as jit,
                 case when ${generic} then set_config('plan_cache_mode', 'force_generic_plan', true) end as plan
            from replica_heartbeat where id = 1`;
}

/** The proof statements (by name) each pooled reader connection has prepared. */
const preparedProofs = new WeakMap<PoolClient, Set<string>>();

/**
 * How the proof's first statement is written on this connection. Where the pool names its
 * statements (database/statement-cache.ts), the heartbeat read is prepared once per connection
 * with SQL `PREPARE`, outside any transaction, and each proof `EXECUTE`s it: it shares its round
 * trip with BEGIN (a simple query), which the protocol's own prepared statements cannot, and
 * Postgres no longer parses and plans it every time: that was about 60 of the 190 µs of server CPU
 * a proof and its ROLLBACK cost here. With the cache off (capacity 0, for poolers that do not keep
 * a session's prepared statements) the read is sent in full each time.
 */
async function proofStatement(client: PoolClient, isAurora: boolean): Promise<(deadline: string, generic: string) => string> {
  if (!namesStatements(client)) return (deadline, generic) => heartbeatRead(isAurora, deadline, generic);
  const name = isAurora ? 'buzz_proof_aurora' : 'buzz_proof';
  let prepared = preparedProofs.get(client);
  if (!prepared?.has(name)) {
    await client.query(`PREPARE ${name}(text, boolean) AS ${heartbeatRead(isAurora, '$1', '$2')}`);
    if (prepared === undefined) preparedProofs.set(client, (prepared = new Set()));
    prepared.add(name);
  }
  return (deadline, generic) => `EXECUTE ${name}(${deadline}, ${generic})`;
}

async function prove(client: PoolClient, ring: ProofRing, aurora: AuroraIdentityCache, permit: HistoryPermit | undefined, genericPlan: boolean): Promise<ReaderTx | ProofFailure> {
  const isAurora = await aurora.probe(client);
  let deadlineMs: number;
  try {
    deadlineMs = await readerDeadlineMs(client);
  } catch {
    return 'reader_validation_error';
  }
  let row: { token: string; epoch: string; backend: string } | undefined;
  try {
    // One round trip: BEGIN, then the heartbeat read as the transaction's first statement (it
    // takes the snapshot), which also installs the transaction-local deadline and, for a read
    // whose statements are all marked GENERIC_PLAN, the transaction-local plan mode (on the
    // replica's 16 partitions a custom plan cost about 0.7 ms of Postgres CPU per page). A proof
    // that fails below rolls the transaction back, settings included.
    const proof = await proofStatement(client, isAurora);
    const results = (await client.query(
      `BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY; ${proof(`'${deadlineMs}'`, genericPlan ? 'true' : 'false')}`,
    )) as unknown as Array<{ rows: Array<{ token: string; epoch: string; backend: string }> }>;
    row = results[1]?.rows[0];
  } catch (err) {
    logger.warn({ err }, 'reader heartbeat read failed');
    return 'reader_validation_error';
  }
  if (!row) return 'reader_validation_error';
  const resolved = ring.resolve(BigInt(row.token), row.epoch);
  if (resolved.kind === 'epoch_mismatch') return 'reader_validation_error';
  if (resolved.kind === 'token_behind') return 'reader_token_behind';
  // No log line for a proof: one per read would be the loudest line of an importer's log (Nest's
  // default logger prints debug); the decision is in buzz_db_route_decision and the read's span.
  return new ReaderTx(client, resolved.entry, row.backend, permit);
}
