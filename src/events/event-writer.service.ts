/**
 * Durable writes with grouped commits. Regular events that arrive together share
 * one transaction (one multi-row insert, one commit), and each caller's promise
 * settles only after that commit, so `OK true` still means "durably stored".
 * A batch that needs nothing but its events rows is that one insert alone, in
 * autocommit. A batch that fails is retried one event at a time, so one bad
 * event cannot fail its neighbours.
 */
import { BeforeApplicationShutdown, Injectable, Logger } from '@nestjs/common';
import { Kysely, Transaction } from 'kysely';
import { DatabaseMetrics, DatabaseService, DB } from '@buzz-relay/read-path';
import { TransactionOperation } from '@buzz-relay/read-path/internal';
import { eventRowOnly, EventWriteRepository } from './event-write.repository.js';
import { StoredEventInput } from './stored-event.js';

export type WriteOutcome = 'stored' | 'duplicate';

interface Pending {
  readonly communityId: string;
  readonly item: StoredEventInput;
  resolve(outcome: WriteOutcome): void;
  reject(err: unknown): void;
}

/** Rows per transaction; measured sweet spot for grouped commits on this hardware. */
export const MAX_BATCH = 64;
const DRAIN_TIMEOUT_MS = 10_000;
/** Concurrent batch transactions; the rest of the writer pool serves other work. */
export const MAX_INFLIGHT_BATCHES = 4;

@Injectable()
export class EventWriter implements BeforeApplicationShutdown {
  private readonly logger = new Logger('EventWriter');
  private queue: Pending[] = [];
  private inflight = 0;
  private scheduled = false;

  constructor(
    private readonly db: DatabaseService,
    private readonly repo: EventWriteRepository,
    private readonly metrics: DatabaseMetrics,
  ) {}

  /** Stores a regular event; resolves after its transaction committed. */
  write(communityId: string, item: StoredEventInput): Promise<WriteOutcome> {
    return new Promise((resolve, reject) => {
      this.queue.push({ communityId, item, resolve, reject });
      this.schedule();
    });
  }

  /** Shutdown: writes already accepted finish (and are acknowledged) before the pools close. */
  async beforeApplicationShutdown(): Promise<void> {
    const deadline = Date.now() + DRAIN_TIMEOUT_MS;
    while ((this.queue.length > 0 || this.inflight > 0) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 10));
    }
    if (this.queue.length > 0 || this.inflight > 0) {
      this.logger.error({ queued: this.queue.length, inflight: this.inflight }, 'shutdown with event writes still pending');
    }
  }

  /**
   * Runs fn in one writer transaction, with the floor lock when it touches a channel, on a
   * checkout recorded as `event_write` (database.md §6.2). A named transaction (`timed`) is also recorded in
   * buzz_db_transaction_duration_seconds, from BEGIN to COMMIT or rollback (database.md §6.3).
   */
  async transaction<T>(touchesChannel: boolean, fn: (tx: Transaction<DB>) => Promise<T>, timed?: TransactionOperation): Promise<T> {
    return this.db.withWriter('event_write', (db) => {
      const run = () =>
        db.transaction().execute(async (tx) => {
          if (touchesChannel) await this.repo.lockFloorShared(tx);
          return fn(tx);
        });
      return timed ? this.metrics.timeTransaction(timed, run) : run();
    });
  }

  /** Inserts items of one community inside tx; returns the hex ids that were new. */
  async insertIn(tx: Kysely<DB>, communityId: string, items: readonly StoredEventInput[]): Promise<Set<string>> {
    const inserted = await this.repo.insertEvents(tx, communityId, items);
    const fresh = firstOccurrences(items).filter((i) => inserted.has(i.event.id));
    await this.repo.applyThreads(tx, communityId, fresh);
    await this.repo.insertMentions(tx, communityId, fresh);
    await this.repo.insertRefs(tx, communityId, fresh);
    return inserted;
  }

  /**
   * A batch that needs nothing but its events rows, as ONE statement in autocommit: under load
   * each round trip of BEGIN, lock, INSERT, COMMIT waits for a busy event loop. It is
   * the transaction it replaces: Postgres runs a lone statement as its own transaction, so the
   * floor lock its `floor` CTE takes before the first row is held until that implicit commit, the
   * deferred floor guard runs inside that commit, and the probe's activity scan sees its
   * xact_start like any open writer's (database.md §1.6, §1.7, §2.7).
   */
  private insertAlone(communityId: string, items: readonly StoredEventInput[]): Promise<Set<string>> {
    const lockFloor = items.some((i) => i.channelId !== null);
    return this.db.withWriter('event_write', (db) => this.repo.insertEvents(db, communityId, items, { lockFloor }));
  }

  private schedule(): void {
    if (this.scheduled || this.inflight >= MAX_INFLIGHT_BATCHES || this.queue.length === 0) return;
    this.scheduled = true;
    // setImmediate lets every frame already read in this turn join the batch.
    setImmediate(() => {
      this.scheduled = false;
      while (this.inflight < MAX_INFLIGHT_BATCHES && this.queue.length > 0) {
        const batch = this.takeBatch();
        this.inflight += 1;
        void this.flush(batch).finally(() => {
          this.inflight -= 1;
          this.schedule();
        });
      }
    });
  }

  /** Takes up to MAX_BATCH pending writes of the community at the head of the queue. */
  private takeBatch(): Pending[] {
    const community = this.queue[0].communityId;
    const batch: Pending[] = [];
    const rest: Pending[] = [];
    for (const p of this.queue) {
      if (batch.length < MAX_BATCH && p.communityId === community) batch.push(p);
      else rest.push(p);
    }
    this.queue = rest;
    return batch;
  }

  private async flush(batch: Pending[]): Promise<void> {
    const communityId = batch[0].communityId;
    const items = batch.map((p) => p.item);
    try {
      const inserted = items.every(eventRowOnly)
        ? await this.insertAlone(communityId, items)
        : await this.transaction(items.some((i) => i.channelId !== null), (tx) => this.insertIn(tx, communityId, items));
      settle(batch, inserted);
    } catch (err) {
      if (batch.length === 1) {
        batch[0].reject(err);
        return;
      }
      this.logger.warn({ size: batch.length, err }, 'grouped write failed; retrying one by one');
      await Promise.all(batch.map((p) => this.flush([p])));
    }
  }
}

/** The first item of each id; a repeat within one batch is a duplicate. */
function firstOccurrences(items: readonly StoredEventInput[]): StoredEventInput[] {
  const seen = new Set<string>();
  return items.filter((i) => !seen.has(i.event.id) && seen.add(i.event.id));
}

function settle(batch: readonly Pending[], inserted: Set<string>): void {
  const claimed = new Set<string>();
  for (const p of batch) {
    const id = p.item.event.id;
    if (inserted.has(id) && !claimed.has(id)) {
      claimed.add(id);
      p.resolve('stored');
    } else {
      p.resolve('duplicate');
    }
  }
}
