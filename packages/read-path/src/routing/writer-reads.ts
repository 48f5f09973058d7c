/**
 * The writer-read cap (BUZZ_DB_WRITER_READ_CAP): client-driven reads that the writer serves never
 * hold more writer connections than this, so event writes, authentication and authorization keep
 * the rest of the pool. A read waits at most WRITER_READ_WAIT_MS for a place, then is refused.
 *
 * The places are shared between tenants (the relay passes the client's key; common/permit-gate.ts):
 * one tenant holds at most its share, a freed place goes to the waiting tenant that used the cap
 * least, and a tenant holding nothing that has waited half the wait gets a place stopped for it:
 * the read held longest by the tenant that used the cap most (at least the whole wait), which is
 * cancelled in Postgres and refused. Without the stop, a handful of keys each holding its share
 * of reads that run for seconds would keep every other key waiting past its deadline.
 */
import type { Logger } from '@nestjs/common';
import { Kysely } from 'kysely';
import { GateRefusal, PermitGate, shareOf } from '../common/permit-gate.js';
import { cancelOnAbort } from '../database/cancel-request.js';
import { DatabaseUnavailableError, ReadShareExceededError, toDatabaseError, WriterReadRejectedError } from '../database/database-errors.js';
import { DatabaseService } from '../database/database.service.js';
import { DB } from '../database/database.types.js';
import { kyselyOn } from '../database/kysely-on-client.js';
import { armReadDeadline, disarmReadDeadline } from '../database/read-deadline.js';
import type { WriterOperation } from '../metrics/database-metrics.service.js';
import { recordReadShareRefusal } from '../metrics/read-share-metrics.js';
import { WRITER_READ_TIMEOUT_DEFAULT_MS } from './routed-reader.options.js';
import type { RoutedReaderModuleOptions } from './routed-reader.options.js';

/** How long a client-driven writer read waits for the writer-read cap before it is refused. */
export const WRITER_READ_WAIT_MS = 1000;

/** Options of a client-driven read on the writer. */
export interface WriterReadOptions {
  /** Datastore span name (§6.4), e.g. `query_events`. */
  readonly span?: string;
  /** Aborted when the client went away: the running statement is cancelled. */
  readonly signal?: AbortSignal;
  /** Whom the read is charged to in the writer-read cap's fair share (the relay: the client's key). */
  readonly tenant?: string;
  /**
   * A read that may cost the writer much CPU (the relay: a filter of more than HEAVY_READ_TERMS
   * values): it also needs a place under the heavy-read cap (BUZZ_DB_WRITER_HEAVY_READ_CAP).
   */
  readonly heavy?: boolean;
}

/**
 * Filters with more values than this are heavy on the writer (the relay's rule is heavyRead in
 * events/event-query.service.ts). A chat client's writer-pinned reads (a thread's few ids, the
 * group state of its channels by `#d`, which is exempt) stay under it; the expensive-filters
 * attack's (8 tags × 250 values, 1,000 `#e` ids) are far over it.
 */
export const HEAVY_READ_TERMS = 64;

export class WriterReads {
  private readonly gate: PermitGate;
  /**
   * Heavy reads hold a place here first, then one of the cap's. Each place is a backend busy on
   * one core; without it, ten heavy reads on a small writer left event writes one core in six.
   * No rescue: a heavy read is not stopped for another.
   */
  private readonly heavyGate: PermitGate;

  constructor(
    private readonly db: DatabaseService,
    private readonly options: RoutedReaderModuleOptions,
    private readonly logger: Logger,
  ) {
    const cap = options.writerReadCap ?? Math.max(1, Math.floor(db.settings.poolSize / 2));
    this.gate = new PermitGate(cap, {
      share: shareOf(cap, options.tenantSharePercent ?? 100),
      // Half the wait: the rescued tenant still has time for its read once a place is freed.
      preemptAfterMs: WRITER_READ_WAIT_MS / 2,
      preemptMinHoldMs: WRITER_READ_WAIT_MS,
    });
    const heavyCap = Math.min(cap, options.writerHeavyReadCap ?? 1);
    this.heavyGate = new PermitGate(heavyCap, { share: shareOf(heavyCap, options.tenantSharePercent ?? 100) });
  }

  /**
   * `work` on a writer connection once the cap admits it, else WriterReadRejected (the cap stayed
   * full) or ReadShareExceeded (its tenant held its share meanwhile, or its read was stopped for a
   * tenant that used the cap less). Its statements run under the client-read deadline
   * (BUZZ_DB_CLIENT_READ_TIMEOUT_MS); `signal` cancels the running statement.
   */
  async read<T>(operation: WriterOperation, work: (db: Kysely<DB>) => Promise<T>, opts: WriterReadOptions = {}): Promise<T> {
    opts.signal?.throwIfAborted();
    if (!opts.heavy) return this.underCap(operation, work, opts);
    const started = performance.now();
    const heavy = await this.heavyGate.admit(WRITER_READ_WAIT_MS, opts.tenant);
    if (typeof heavy === 'string') throw this.refused('writer_heavy_reads', heavy, operation);
    try {
      // One wait in all: what is left of it for the cap.
      return await this.underCap(operation, work, opts, Math.max(1, WRITER_READ_WAIT_MS - (performance.now() - started)));
    } finally {
      heavy.release();
    }
  }

  private refused(gate: 'writer_reads' | 'writer_heavy_reads', refusal: GateRefusal, operation: WriterOperation): Error {
    recordReadShareRefusal(gate, refusal);
    this.logger.debug({ operation, refusal, gate }, 'writer read refused: writer-read cap full');
    return refusal === 'share' ? new ReadShareExceededError(gate) : new WriterReadRejectedError();
  }

  private async underCap<T>(operation: WriterOperation, work: (db: Kysely<DB>) => Promise<T>, opts: WriterReadOptions, waitMs = WRITER_READ_WAIT_MS): Promise<T> {
    const client = opts.signal;
    client?.throwIfAborted();
    // Aborted when the client goes away or when the cap's rescue stops this read.
    const stop = new AbortController();
    let preempted = false;
    const permit = await this.gate.admit(waitMs, opts.tenant, () => {
      preempted = true;
      stop.abort();
    });
    if (typeof permit === 'string') throw this.refused('writer_reads', permit, operation);
    // Not AbortSignal.any: a client's signal lives as long as its connection, and every read
    // would hang a dependent signal on it.
    const gone = () => stop.abort(client?.reason);
    if (client?.aborted) gone();
    else client?.addEventListener('abort', gone, { once: true });
    try {
      return await this.onConnection(operation, work, stop.signal);
    } catch (err) {
      if (!preempted || client?.aborted === true) throw err;
      recordReadShareRefusal('writer_reads', 'preempted');
      this.logger.debug({ operation }, 'writer read stopped for a tenant that used the writer-read cap less');
      throw new ReadShareExceededError('writer_reads');
    } finally {
      client?.removeEventListener('abort', gone);
      permit.release();
    }
  }

  /** One writer connection under the client-read deadline; `signal` cancels its statement. */
  private async onConnection<T>(operation: WriterOperation, work: (db: Kysely<DB>) => Promise<T>, signal: AbortSignal): Promise<T> {
    const client = await this.db.acquireWriter(operation, signal);
    armReadDeadline(client, this.options.clientReadTimeoutMs ?? WRITER_READ_TIMEOUT_DEFAULT_MS);
    const cancel = cancelOnAbort(client, signal);
    let result: T;
    try {
      result = await work(kyselyOn(client));
    } catch (caught) {
      const err = toDatabaseError(caught);
      const cancelled = cancel.dispose();
      disarmReadDeadline(client);
      client.release(cancelled || err instanceof DatabaseUnavailableError ? (err as Error) : undefined);
      throw err;
    }
    const cancelled = cancel.dispose();
    disarmReadDeadline(client);
    client.release(cancelled ? new Error('read abandoned: the client went away') : undefined);
    return result;
  }
}
