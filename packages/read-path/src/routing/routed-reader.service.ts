/**
 * RoutedReader: the one service every read that may go to the replica goes through
 * (database.md §2.4–§2.8). It decides writer or replica, proves the replica session's
 * freshness, serves the page, and records exactly one `buzz_db_route_decision` per request.
 *
 * Over 350 lines: the decision, the admission, the proof and the failure rules of seeds 001 and
 * 002 are read as one table; they stay in the one door rather than in files a read can go around.
 */
import { Inject, Injectable, Logger } from '@nestjs/common';
import { Kysely } from 'kysely';
import { DatabaseService } from '../database/database.service.js';
import { ReaderPool } from '../database/reader-pool.js';
import { DB } from '../database/database.types.js';
import { HistoryReadRejectedError, QueryTimedOutError, ReadShareExceededError, toDatabaseError } from '../database/database-errors.js';
import { HISTORY_PERMIT_WAIT_MS, HistoryPermit, HistoryReadGate } from '../history-reads/history-read-gate.js';
import { HistoryReadPolicy } from '../history-reads/history-read-policy.js';
import { DatabaseMetrics, RejectedReason, RoutePathLabel, SpillReason, WriterOperation, WriterReason } from '../metrics/database-metrics.service.js';
import { datastoreSpan } from '../metrics/datastore-span.js';
import { recordReadShareRefusal } from '../metrics/read-share-metrics.js';
import { ProofEntry } from '../replica-fence/proof-ring.js';
import { readBudgetWarning } from '../replica-fence/replica-fence.constants.js';
import { ReplicaFenceService } from '../replica-fence/replica-fence.service.js';
import { ReadSession } from './read-session.js';
import { AuroraIdentityCache, openProvedReader, ReaderTx } from './reader-tx.js';
import { Author, RecentWrites } from './recent-writes.js';
import { RoutePaths } from './route-paths.js';
import { RoutePredicate } from './route-predicate.js';
import { ROUTED_READER_OPTIONS } from './routed-reader.options.js';
import type { RoutedReaderModuleOptions } from './routed-reader.options.js';
import { ReaderOperation, ReplicaPageRules, RouteDecision, RouteRequest } from './routed-read.types.js';
import { WriterReadOptions, WriterReads } from './writer-reads.js';

export { WRITER_READ_WAIT_MS } from './writer-reads.js';
export type { WriterReadOptions } from './writer-reads.js';

type Check = { ok: true; verdict: 'covered' | 'fresh' } | { ok: false; reason: 'disabled' | 'stale'; spill?: SpillReason };

@Injectable()
export class RoutedReader {
  private readonly writes = new RecentWrites();
  private readonly logger = new Logger('RoutedReader');
  private readonly aurora = new AuroraIdentityCache();
  /** The writer-read cap: client-driven reads never hold more writer connections than this, one tenant its share of it. */
  private readonly writerReads: WriterReads;

  constructor(
    @Inject(ROUTED_READER_OPTIONS) private readonly options: RoutedReaderModuleOptions,
    private readonly db: DatabaseService,
    private readonly readers: ReaderPool,
    private readonly fence: ReplicaFenceService,
    private readonly metrics: DatabaseMetrics,
    private readonly gate: HistoryReadGate,
    private readonly policy: HistoryReadPolicy,
    private readonly paths: RoutePaths,
  ) {
    this.writerReads = new WriterReads(db, options, this.logger);
    if (!policy.shed) this.logger.warn('history reads spill onto the writer instead of being shed (a benchmark baseline only)');
    const warning = readBudgetWarning(options.readMaxAgeMs, fence.probeIntervalMs, fence.probes);
    if (warning) this.logger.warn(warning);
  }

  /**
   * Read-your-writes (docs/read-routing.md): the writer calls this once an author's write has
   * committed and before the client hears it was stored. That author's bounded reads then accept
   * only proofs committed after the write, for the staleness window.
   */
  noteWrite(author: Author): void {
    this.writes.noteWrite(author);
  }

  /** Whether `author` wrote recently enough to be owed read-your-writes (so its reads route alone). */
  owedOwnWrites(author: Author): boolean {
    return this.writes.lastWriteAt(author) !== undefined;
  }

  /** Bounded-read budget B in ms; 0 = off (which also keeps the generic seams dark). */
  get budgetMs(): number {
    return this.options.readMaxAgeMs;
  }

  get routingEnabled(): boolean {
    return this.budgetMs > 0;
  }

  get hasReader(): boolean {
    return this.db.hasReader;
  }

  /**
   * Whether a bounded read made now would be proved fresh on the replica, checked as a read
   * proves itself: a reader configured, the budget on, this process's fence probe running, and
   * the heartbeat the replica has replayed resolving to a proof within the budget (one reader
   * checkout and one statement). The read may still be shed at checkout. `reason` says what is
   * missing, in the options' own names; for a health check or a start-up gate.
   */
  async replicaServing(): Promise<{ serving: boolean; proofAgeMs?: number; reason?: string }> {
    const missing = (reason: string, proofAgeMs?: number) => ({ serving: false, reason, ...(proofAgeMs === undefined ? {} : { proofAgeMs }) });
    if (!this.db.hasReader) return missing('no reader: DatabaseModule readerUrl is not set');
    if (this.budgetMs <= 0) return missing('RoutedReaderModule readMaxAgeMs is 0: bounded reads stay on the writer');
    if (!this.fence.probes) return missing('ReplicaFenceModule probe is off: no proof exists in this process');
    if (this.fence.ring.newest() === undefined) return missing(`no proof yet (fence ${this.fence.getState()})`);
    let seen: { token: string; epoch: string } | undefined;
    try {
      const client = await this.readers.acquire('maintenance');
      try {
        seen = (await client.query<{ token: string; epoch: string }>(`select token::text as token, epoch::text as epoch from replica_heartbeat where id = 1`)).rows[0];
      } finally {
        client.release();
      }
    } catch (err) {
      return missing(`replica unreachable: ${err instanceof Error ? err.message : String(err)}`);
    }
    if (seen === undefined) return missing('the replica has no heartbeat yet');
    const resolved = this.fence.ring.resolve(BigInt(seen.token), seen.epoch);
    if (resolved.kind !== 'proved') return missing(`the replica has not replayed a proved heartbeat (${resolved.kind})`);
    const proofAgeMs = this.fence.ring.ageOf(resolved.entry);
    if (proofAgeMs > this.budgetMs) return missing(`the replica's proof is ${Math.round(proofAgeMs)} ms old, over readMaxAgeMs ${this.budgetMs}`, proofAgeMs);
    return { serving: true, proofAgeMs };
  }

  /**
   * Resolves once replicaServing() holds; rejects after `timeoutMs` with what was still missing.
   * For tests and for an app that will not start serving without its replica.
   */
  async whenReplicaServing(timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const now = await this.replicaServing();
      if (now.serving) return;
      if (Date.now() >= deadline) throw new Error(`replica not serving after ${timeoutMs} ms: ${now.reason}`);
      await new Promise((resolve) => setTimeout(resolve, Math.min(50, Math.max(1, deadline - Date.now()))));
    }
  }

  /**
   * A routed read: one decision, the page on the proved replica session or on the writer.
   * `postVerify` (thread forward cursors, CoveredPostVerified) checks the replica page against
   * the proved entry; a page that fails it is dropped (not recorded), recorded once as
   * `thread_eof/writer/stale` and re-run on the writer. Failures leave as typed errors
   * (database/database-errors.ts); a shed read is a HistoryReadRejectedError.
   */
  async read<T>(req: RouteRequest, work: (db: Kysely<DB>) => Promise<T>, postVerify?: (page: T, entry: ProofEntry) => boolean): Promise<T> {
    return this.spanned(req, async () => {
      const decision = await this.route(req);
      const fallBack = () => this.clientReadOnWriter(fallbackOperation(req), snapshotAtStart(req, work), { signal: req.signal, tenant: req.tenant, heavy: req.heavy });
      if (decision.target === 'writer') return fallBack();
      req.onSnapshot?.(this.stillShared(decision.verdict, decision.tx.entry));
      const { tx } = decision;
      let result: T;
      const cancel = tx.cancelOnAbort(req.signal);
      try {
        result = await work(tx.db);
      } catch (caught) {
        const err = toDatabaseError(caught);
        if (cancel.dispose()) return this.abandoned(req, tx, err);
        return this.replicaFailed(req, tx, err, fallBack);
      }
      if (cancel.dispose()) return this.abandoned(req, tx, new Error('read abandoned: the client went away'));
      tx.release();
      if (postVerify && !postVerify(result, tx.entry)) {
        this.metrics.recordRoute('thread_eof', { decision: 'writer', reason: 'stale' });
        return fallBack();
      }
      this.metrics.recordRoute(req.path, { decision: 'replica', reason: decision.verdict });
      return result;
    });
  }

  /**
   * A routed page plus a request-scoped session for follow-ups on the same snapshot (§2.8).
   * The caller must release the session (or hold it with `await using`). `rules` may surface
   * more replica failures and send a replica page to the writer (ReplicaPageRules).
   */
  async session<T>(req: RouteRequest, page: (db: Kysely<DB>) => Promise<T>, rules: ReplicaPageRules<T> = {}): Promise<{ page: T; session: ReadSession }> {
    return this.spanned(req, async () => {
      const decision = await this.route(req);
      const fallBack = async () => ({
        page: await this.clientReadOnWriter(fallbackOperation(req), snapshotAtStart(req, page), { signal: req.signal, tenant: req.tenant }),
        session: this.writerSession(req.tenant),
      });
      if (decision.target === 'writer') return fallBack();
      req.onSnapshot?.(this.stillShared(decision.verdict, decision.tx.entry));
      const { tx } = decision;
      let result: T;
      try {
        result = await page(tx.db);
      } catch (caught) {
        return this.replicaFailed(req, tx, toDatabaseError(caught), fallBack, rules.surface);
      }
      const redo = rules.redo?.(result);
      if (redo !== undefined) {
        tx.release();
        this.metrics.recordRoute(req.path, { decision: 'writer', reason: redo });
        return fallBack();
      }
      this.metrics.recordRoute(req.path, { decision: 'replica', reason: decision.verdict });
      return { page: result, session: new ReadSession(tx, this.writerRunner(req.tenant), this.metrics, this.logger) };
    });
  }

  /**
   * A read a client asked for, served by the writer (no route decision): writer-pinned reads (no
   * `kinds`, channel metadata, strong consistency, search matching, the bridge's windows) and
   * every writer fallback of a routed read. Capped (WriterReads): a place of the writer-read cap
   * within 1 s (a heavy place too when `heavy`), the tenant's share, the client read deadline;
   * else WriterReadRejectedError or ReadShareExceededError.
   */
  clientReadOnWriter<T>(operation: WriterOperation, work: (db: Kysely<DB>) => Promise<T>, opts: WriterReadOptions = {}): Promise<T> {
    if (opts.span) return datastoreSpan(this.metrics, opts.span, () => this.writerReads.read(operation, work, { signal: opts.signal, tenant: opts.tenant, heavy: opts.heavy }));
    return this.writerReads.read(operation, work, opts);
  }

  /**
   * A writer read the relay itself needs before it can answer anyone (tenant resolution,
   * authentication, access checks): outside the writer-read cap, under the writer session's own
   * deadline; never a page a client asked for. `span` names a datastore span (`query_events`).
   */
  async internalReadOnWriter<T>(operation: WriterOperation, work: (db: Kysely<DB>) => Promise<T>, span?: string): Promise<T> {
    if (span) return datastoreSpan(this.metrics, span, () => this.internalReadOnWriter(operation, work));
    return this.db.withWriter(operation, work);
  }

  private writerRunner(tenant: string | undefined) {
    return <T>(work: (db: Kysely<DB>) => Promise<T>) => this.clientReadOnWriter('subscription_history', work, { tenant });
  }

  private writerSession(tenant: string | undefined): ReadSession {
    return new ReadSession(undefined, this.writerRunner(tenant), this.metrics, this.logger);
  }

  /** A replica read whose client went away (a cancel was sent): the connection is destroyed, nothing re-runs. */
  private abandoned(req: RouteRequest, tx: ReaderTx, err: unknown): never {
    tx.release(true);
    this.metrics.recordRoute(req.path, { decision: 'replica', reason: 'statement_cancelled' });
    this.logger.debug({ path: req.path }, 'replica read abandoned: the client went away');
    throw err;
  }

  /**
   * §2.8: a replica deadline (QueryTimedOutError) of a history read is surfaced, and so is what
   * `surface` names; anything else re-runs on the writer.
   */
  private async replicaFailed<T>(req: RouteRequest, tx: ReaderTx, err: unknown, rerun: () => Promise<T>, surface?: (err: unknown) => boolean): Promise<T> {
    const history = fallbackOperation(req) === 'subscription_history';
    if ((history && err instanceof QueryTimedOutError) || surface?.(err) === true) {
      tx.release(true);
      this.metrics.recordRoute(req.path, { decision: 'replica', reason: 'statement_cancelled' });
      throw err;
    }
    this.logger.warn({ path: req.path, backend: tx.backend, err }, 'replica read failed; re-running on writer');
    tx.release(true);
    this.metrics.recordRoute(req.path, { decision: 'writer', reason: 'replica_error' });
    return rerun();
  }

  private check(req: RouteRequest, entry: ProofEntry, stage: 'precheck' | 'proved'): Check {
    const p: RoutePredicate = req.predicate;
    switch (p.kind) {
      case 'bounded':
        return this.bounded(req, entry);
      case 'covered':
        return p.upperMs <= entry.fenceWall ? { ok: true, verdict: 'covered' } : { ok: false, reason: 'stale', spill: 'fence_wall_behind' };
      case 'covered_post_verified':
        return { ok: true, verdict: 'covered' };
      case 'bounded_or_covered':
        return p.upperMs <= entry.fenceWall ? { ok: true, verdict: 'covered' } : this.bounded(req, entry);
      default:
        return assertNever(p, stage);
    }
  }

  /**
   * Whether an identical read asking later could be served from a replica snapshot proved with
   * `entry` (RouteRequest.onSnapshot): a covered read's bound stays below the proved wall; a
   * bounded read's proof must still be within the budget. (Reads owed their own writes never ask.)
   */
  private stillShared(verdict: 'covered' | 'fresh', entry: ProofEntry): () => boolean {
    if (verdict === 'covered') return () => true;
    return () => this.fence.ring.ageOf(entry) <= this.budgetMs;
  }

  /**
   * Bounded staleness, plus read-your-writes for an author. The two failures spill under
   * different reasons of seed 001's closed set: an entry older than the budget is the probe being
   * late (`heartbeat_stale`, the signal that isolates probe lateness); a fresh entry that does not
   * yet cover the author's own write is a read whose bound lies above what the fence has proven
   * (`fence_wall_behind`). See docs/read-routing.md.
   */
  private bounded(req: RouteRequest, entry: ProofEntry): Check {
    if (this.budgetMs <= 0) return { ok: false, reason: 'disabled' };
    if (this.fence.ring.ageOf(entry) > this.budgetMs) return { ok: false, reason: 'stale', spill: 'heartbeat_stale' };
    const ownWrite = req.author ? this.writes.lastWriteAt(req.author) : undefined;
    if (ownWrite !== undefined && entry.committedAt <= ownWrite) return { ok: false, reason: 'stale', spill: 'fence_wall_behind' };
    return { ok: true, verdict: 'fresh' };
  }

  /**
   * §3.4: a history permit within 1 s (FIFO within a tenant), else the read is shed as
   * `history_read_cap`; a heavy read needs a heavy place too, in the same second. One refused
   * because its tenant held its share is recorded the same way and thrown as
   * ReadShareExceededError (the client's own reads filled it, not the pod's).
   */
  private async admit(path: RoutePathLabel, tenant: string | undefined, heavy: boolean): Promise<HistoryPermit | undefined> {
    if (!this.policy.shed) return undefined;
    const permit = await this.gate.admitRead(heavy, tenant);
    if (!('refusal' in permit)) return permit;
    recordReadShareRefusal(permit.gate, permit.refusal);
    if (permit.refusal === 'capacity') this.reject(path, 'history_read_cap');
    this.metrics.recordRoute(path, { decision: 'rejected', reason: 'history_read_cap' });
    throw new ReadShareExceededError(permit.gate);
  }

  /**
   * §3.3: a history read whose reader acquire timed out is shed when the reader is busy, and
   * falls back to the writer only when it is down. Busy: its connections are all in use, or it
   * is still opening them, and its last dial connected. Down: its last dial failed (refused,
   * reset, or timed out at READER_DIAL_TIMEOUT_MS). The pool's counters cannot tell the two apart
   * (a dial in flight counts as a connection): judged by them, a reconnect storm that finds the
   * pool still dialing would send its history reads to the writer.
   */
  private shedsOnAcquireTimeout(operation: ReaderOperation): boolean {
    if (operation !== 'subscription_history' || !this.policy.shed) return false;
    return !this.readers.dialsFailing();
  }

  /** Records the one route event of a shed read (never a spill) and throws HistoryReadRejectedError. */
  private reject(path: RoutePathLabel, reason: RejectedReason): never {
    this.metrics.recordRoute(path, { decision: 'rejected', reason });
    this.logger.debug({ path, reason }, 'history read shed');
    throw new HistoryReadRejectedError(reason);
  }

  private toWriter(path: RoutePathLabel, reason: WriterReason, spill?: SpillReason): RouteDecision {
    this.metrics.recordRoute(path, { decision: 'writer', reason });
    if (spill) this.metrics.recordSpill(path, spill);
    return { target: 'writer' };
  }

  /** Every routed read starts here: its path label must be registered (RoutePaths). */
  private spanned<T>(req: RouteRequest, fn: () => Promise<T>): Promise<T> {
    this.paths.check(req.path);
    return req.span ? datastoreSpan(this.metrics, req.span, fn) : fn();
  }

  /**
   * §2.4, the decision. A writer outcome is recorded here; a replica outcome is recorded by
   * read() or session() after serving. A shed history read (seed 000) is recorded here as
   * `rejected/<reason>` and thrown as HistoryReadRejectedError: it is never a writer outcome.
   * Private: the reader transaction it opens never leaves this class except inside a ReadSession.
   */
  private async route(req: RouteRequest): Promise<RouteDecision> {
    // No reader, or no probe in this process (ReplicaFenceModule probe: false): nothing is ever proved.
    if (!this.hasReader || !this.fence.probes) return this.toWriter(req.path, 'disabled');
    const newest = this.fence.ring.newest();
    if (newest === undefined) return this.toWriter(req.path, 'uninitialized', 'heartbeat_missing');
    const pre = this.check(req, newest, 'precheck');
    if (!pre.ok) return this.toWriter(req.path, pre.reason, pre.spill);
    const operation = fallbackOperation(req);
    // The permit is taken after the pre-check (a read bound for the writer never waits on the
    // gate) and before the acquire (no connection is held while a read waits for a permit).
    const permit = operation === 'subscription_history' ? await this.admit(req.path, req.tenant, req.heavy === true) : undefined;
    const tx = await openProvedReader(this.readers, this.fence.ring, this.aurora, operation, permit, req.genericPlan === true);
    if (!(tx instanceof ReaderTx)) {
      permit?.release();
      if (tx === 'reader_acquire_timeout' && this.shedsOnAcquireTimeout(operation)) this.reject(req.path, 'reader_acquire_timeout');
      if (tx === 'reader_acquire_timeout') this.logger.warn({ path: req.path }, 'reader pool acquire timed out; routing to writer');
      return this.toWriter(req.path, tx, tx);
    }
    const verdict = this.check(req, tx.entry, 'proved');
    if (!verdict.ok) {
      tx.release();
      return this.toWriter(req.path, 'stale', 'replica_lag');
    }
    return { target: 'replica', tx, verdict: verdict.verdict };
  }
}

/** `work` on the writer: its statement takes the read's snapshot as it starts (RouteRequest.onSnapshot). */
function snapshotAtStart<T>(req: RouteRequest, work: (db: Kysely<DB>) => Promise<T>): (db: Kysely<DB>) => Promise<T> {
  const fixed = req.onSnapshot;
  if (fixed === undefined) return work;
  return (db) => {
    fixed();
    return work(db);
  };
}

/** Writer-side fallbacks acquire with the read's own operation (§2.2). */
function fallbackOperation(req: RouteRequest): ReaderOperation {
  return req.operation ?? 'subscription_history';
}

function assertNever(p: never, stage: string): never {
  throw new Error(`unknown route predicate at ${stage}: ${JSON.stringify(p)}`);
}
