/**
 * History reads for REQ, COUNT and the HTTP bridge. One query per filter (NIP-01 OR
 * semantics), at most four in flight, results handed back strictly in filter order.
 *
 * Every read goes through the RoutedReader (database.md §2.2; docs/read-routing.md), which
 * serves it from the replica only when the replica session proves it is fresh enough, and
 * records one route decision per filter. Two kinds of read are pinned to the writer and record
 * no decision: filters that can match channel metadata (kind 39000, or no `kinds` at all), and
 * `/query` filters that carry `"consistency": "strong"`. A call without a HistoryContext is a
 * writer-pinned read too (internal callers that have not been classified as routed).
 *
 * Over 350 lines: a filter's read ahead, its memory lease, its single flight and its paging are
 * one lifecycle, each step holding the others' state; split, they would pass it back and forth.
 */
import { Injectable, Optional } from '@nestjs/common';
import { Kysely } from 'kysely';
import { NostrEvent, NostrFilter } from '../nostr/nostr.types.js';
import { DB, HistoryReadRejectedError, ReadShareExceededError, RoutedReader, WriterReadRejectedError } from '@buzz-relay/read-path';
import type { RoutePath } from '@buzz-relay/read-path';
import { forQuery, HEAVY_READ_TERMS } from '@buzz-relay/read-path/internal';
import { allStatementsGeneric, channelDecidesH } from './event-read.queries.js';
import { EventReadRepository, HistoryPage } from './event-read.repository.js';
import { effectiveLimit, filterTerms, matchesNothing, matchFilter } from '../nostr/filter.js';
import { HistoryFlights, type Started } from './history-flights.js';
import { isAddressable, VISIBILITY_GATED_KINDS } from '../nostr/kinds.js';
import { ReadScope } from '../channels/read-scope.js';
import { MemoryBudget, MemoryLease, MemoryPool, MemoryRefusedError } from '../memory/memory-budget.js';
import { eventHeapBytes, HEAP_BYTES_PER_TEXT_BYTE } from './stored-event.js';

export const FILTER_QUERY_CONCURRENCY = 4;
/**
 * Reads share a flight only when their filter is small. The reads a storm repeats are short
 * (`{"kinds":[1],"limit":50}`); a filter of thousands of values is one client's, and keying a
 * flight by it costs a copy of it as text per read. And V8 hashes a string longer than 16,383
 * characters by its length alone: flight keys of the same length then all collide, and every
 * lookup compared each open key in full, which held the event loop for hundreds of ms at a time.
 */
export const FLIGHT_MAX_TERMS = 64;
export const FLIGHT_MAX_KEY_CHARS = 4096;
export const CHANNEL_METADATA_KIND = 39000;
/**
 * The memory one part of a filter's page may take (the `history` pool): Postgres sends at most a
 * third of it (byteCapped, HEAP_BYTES_PER_TEXT_BYTE), the rest is what the rows cost beyond their
 * bytes. A larger page is read in several parts, each once the previous one was sent.
 */
export const HISTORY_PAGE_LEASE_BYTES = 1024 * 1024;
/** Below this a page is not worth reading: the read is refused for memory instead. */
export const HISTORY_PAGE_MIN_LEASE_BYTES = 64 * 1024;
/** How long a history read waits for the `history` pool to have room before it is refused. */
export const HISTORY_MEMORY_WAIT_MS = 3000;

/** A page as one caller read it: the lease of its rows' memory when this caller's read ran (not a shared one's). */
interface PageRead {
  readonly page: HistoryPage;
  readonly lease?: MemoryLease;
}

/** How a filter's read gets its memory: a lease carried over from the page's previous part, or a new one (waiting for it or not). */
interface RowsMemory {
  readonly wait: boolean;
  readonly lease?: MemoryLease;
}

export interface HistoryContext {
  /** Route-decision path label: `req_historical` / `bridge_query` for rows, `count_req` / `bridge_count` for counts. */
  readonly path: RoutePath;
  /**
   * The authenticated reader; its own acknowledged writes are always visible (read-your-writes),
   * and the read is charged to it in the read gates' fair shares.
   */
  readonly reader?: string;
  /** `/query` only: honour `"consistency": "strong"` (serve that filter from the writer). */
  readonly honourConsistency?: boolean;
  /** `/query` catch-all `page` only: rows to skip before each filter's page (relay.md §3.3). */
  readonly offset?: number;
  /** Aborted when the client went away: the read's running statement is cancelled. */
  readonly signal?: AbortSignal;
  /**
   * True while the reader's output has not drained: no filter is read ahead meanwhile, each is
   * read when its turn comes (absent: always read ahead).
   */
  readonly outputBacklogged?: () => boolean;
}

/** Events of one filter's page (all of it, or the part one memory lease holds) and whether the read ends with them. */
export interface HistoryBatch {
  readonly events: NostrEvent[];
  readonly last: boolean;
}

@Injectable()
export class EventQueryService {
  // A flight refused for its starter's share is shed for its joiners too: they try under their own.
  private readonly flights = new HistoryFlights(
    (err) => err instanceof HistoryReadRejectedError || err instanceof WriterReadRejectedError || err instanceof ReadShareExceededError || err instanceof MemoryRefusedError,
  );
  /** The memory each page's rows hold until the caller moved past them (absent: unbounded). */
  private readonly rowsMemory: MemoryPool | undefined;

  constructor(
    private readonly routed: RoutedReader,
    private readonly repo: EventReadRepository,
    @Optional() memory?: MemoryBudget,
  ) {
    this.rowsMemory = memory?.pool('history');
  }

  /**
   * Runs each filter and yields its accepted events in filter order, in batches: one per filter,
   * or several when its page is larger than a memory lease (each batch is read from where the
   * last one ended, with the page's `until`/`before_id` cursor, once the caller has taken the
   * last). `last` marks the read's final batch. With `dedupe`, an id already yielded by an
   * earlier filter is skipped, after acceptance, so a row rejected by filter A stays eligible for
   * filter B.
   */
  async *history(scope: ReadScope, filters: readonly NostrFilter[], dedupe: boolean, ctx?: HistoryContext): AsyncGenerator<HistoryBatch> {
    const seen = new Set<string>();
    const pending = new Map<number, Promise<PageRead>>();
    // Only the filter being awaited may wait for memory; the ones read ahead (`ahead`) take it
    // when it is there and are read again, waiting, when their turn comes (so no read ahead holds
    // memory while another's turn waits for it).
    const ahead = new Set<number>();
    const start = (i: number, wait: boolean) => {
      if (!wait) ahead.add(i);
      pending.set(i, this.queryOne(scope, filters[i], ctx, { wait }));
    };
    // Up to FILTER_QUERY_CONCURRENCY filters from the one awaited, while the reader's output
    // keeps up: read ahead for a client that does not take its frames, rows would only wait in
    // memory (and hold the pool) instead of in Postgres.
    const readAhead = (from: number) => {
      while (next < filters.length && next < from + FILTER_QUERY_CONCURRENCY && ctx?.outputBacklogged?.() !== true) start(next++, false);
    };
    let next = 0;
    try {
      for (let i = 0; i < filters.length; i++) {
        if (next === i) start(next++, true);
        readAhead(i);
        let read = await pending.get(i)!.catch((err: unknown) => {
          if (!ahead.has(i) || !(err instanceof MemoryRefusedError)) throw err;
          return this.queryOne(scope, filters[i], ctx, { wait: true });
        });
        pending.delete(i);
        readAhead(i + 1);
        let left = effectiveLimit(filters[i]);
        for (;;) {
          const { page, lease } = read;
          left -= page.events.length;
          const more = page.cut && left > 0 && page.events.length > 0;
          const hDecided = channelDecidesH(scope, filters[i]) ? 'h-decided' : undefined;
          const events = page.events.filter((ev) => matchFilter(ev, filters[i], hDecided) && (!dedupe || (!seen.has(ev.id) && seen.add(ev.id))));
          let carry = false;
          try {
            yield { events, last: !more && i === filters.length - 1 };
            carry = more;
          } finally {
            // The caller has sent (or dropped) the batch: its rows' memory goes back, unless the
            // next part of the page reads into the same lease.
            if (!carry) lease?.end();
          }
          if (!more) break;
          const end = page.events[page.events.length - 1];
          read = await this.queryOne(scope, { ...filters[i], until: end.created_at, before_id: end.id, limit: left }, ctx && { ...ctx, offset: undefined }, { wait: false, lease });
          // Each part must move past the cursor (a row stored with a fractional created_at, which
          // the wire rounds, would be read again): what does not is dropped, and a part with
          // nothing new ends the page.
          const onward = read.page.events.filter((ev) => ev.created_at < end.created_at || (ev.created_at === end.created_at && ev.id > end.id));
          if (onward.length < read.page.events.length) read = { ...read, page: { events: onward, cut: read.page.cut && onward.length > 0 } };
        }
      }
    } finally {
      // Reads the caller no longer waits for give their memory back when they finish.
      for (const p of pending.values()) p.then((r) => r.lease?.end(), () => undefined);
    }
  }

  /**
   * Sum over filters, without de-duplication (NIP-45). Counts route on the bounded arm only:
   * extra deleted rows cannot be absorbed by a number, so covered routing never applies.
   */
  async count(scope: ReadScope, filters: readonly NostrFilter[], ctx?: HistoryContext): Promise<number> {
    const counts = await Promise.all(
      filters.map((f) => {
        if (matchesNothing(f)) return 0; // no connection, no route decision
        return this.countRead(scope, f, ctx, (db) => this.repo.count(db, scope, f));
      }),
    );
    return counts.reduce((a, b) => a + b, 0);
  }

  /**
   * A count's one read of `f`, by `work`: pinned to the writer as history reads are (writerPinned),
   * routed on the bounded arm otherwise (extra deleted rows cannot be absorbed by a number, so
   * covered routing never applies). `heavy` by default as for a page (heavyRead).
   */
  countRead<T>(scope: ReadScope, f: NostrFilter, ctx: HistoryContext | undefined, work: (db: Kysely<DB>) => Promise<T>, opts: { heavy?: boolean; span?: string } = {}): Promise<T> {
    const heavy = ctx !== undefined && (opts.heavy ?? heavyRead(f));
    if (ctx === undefined || this.writerPinned(f, ctx)) return this.routed.clientReadOnWriter('authorization', work, { span: 'count_events', signal: ctx?.signal, tenant: ctx?.reader, heavy });
    const span = opts.span ?? 'count_events_routed';
    return this.routed.read({ path: ctx.path, predicate: { kind: 'bounded' }, span, author: author(scope, ctx), signal: ctx.signal, tenant: ctx.reader, heavy }, work);
  }

  private queryOne(scope: ReadScope, filter: NostrFilter, ctx: HistoryContext | undefined, memory: RowsMemory): Promise<PageRead> {
    const p = this.runQuery(scope, filter, ctx, memory);
    // Rejections are observed when awaited in order; keep them from being reported as unhandled meanwhile.
    p.catch(() => undefined);
    return p;
  }

  /**
   * One filter's page (or the next part of one). Identical reads waiting at the same time share
   * one database read (HistoryFlights; flightKey says what may share); the read that ran holds
   * the rows' memory lease, the ones that joined it hold none.
   */
  private async runQuery(scope: ReadScope, filter: NostrFilter, ctx: HistoryContext | undefined, memory: RowsMemory): Promise<PageRead> {
    const limit = effectiveLimit(filter);
    if (limit <= 0 || matchesNothing(filter)) {
      memory.lease?.end();
      return { page: { events: [], cut: false } }; // no permit, no connection, no route decision
    }
    let ran = false;
    let leased = false;
    let lease: MemoryLease | undefined;
    let cap: number | undefined;
    try {
      const page = await this.flights.run(this.flightKey(scope, filter, limit, ctx), ctx?.signal, async (signal, started) => {
        ran = true;
        // Admission waits for memory to be there but takes none: a read queued for its permit
        // holds no memory, so a flood of queued reads cannot fill the pool against the reads
        // actually running (or anyone's next REQ). The lease is taken once the read has its
        // connection, and never waits then.
        if (memory.lease === undefined) await this.rowsMemoryFree(ctx?.reader, memory.wait, signal);
        return this.readPage(scope, filter, ctx, signal, started, async (db) => {
          // Taken on the first try; a retry (another connection) reads under the same cap.
          if (!leased) {
            leased = true;
            lease = memory.lease ? this.regrow(memory.lease) : this.leaseRows(ctx?.reader);
            cap = lease && Math.floor(lease.bytes / HEAP_BYTES_PER_TEXT_BYTE);
          }
          const rows = await this.repo.queryPage(db, scope, filter, limit, ctx?.offset, undefined, cap);
          lease?.settle(rows.events.reduce((sum, ev) => sum + eventHeapBytes(ev), 0));
          return rows;
        });
      });
      // A read that joined another's needs no memory of its own.
      if (!ran) memory.lease?.end();
      return { page, lease };
    } catch (err) {
      lease?.end();
      memory.lease?.end();
      throw err;
    }
  }

  /**
   * `snapshot` is called once the page's snapshot is fixed (RouteRequest.onSnapshot): as a writer
   * read's work starts, or when a replica read's proof is answered, with how long it may be shared.
   */
  private readPage(scope: ReadScope, filter: NostrFilter, ctx: HistoryContext | undefined, signal: AbortSignal | undefined, snapshot: Started, work: (db: Kysely<DB>) => Promise<HistoryPage>): Promise<HistoryPage> {
    const heavy = ctx !== undefined && heavyRead(filter);
    if (ctx === undefined || this.writerPinned(filter, ctx)) {
      const onWriter = (db: Kysely<DB>) => {
        snapshot();
        return work(db);
      };
      return this.routed.clientReadOnWriter('authorization', onWriter, { span: 'query_events', signal, tenant: ctx?.reader, heavy });
    }
    const predicate = forQuery({ channelId: pinnedChannel(scope), until: filter.until }, this.routed.routingEnabled);
    const genericPlan = allStatementsGeneric(scope, filter, ctx.offset ?? 0);
    return this.routed.read({ path: ctx.path, predicate, span: 'query_events_routed', author: author(scope, ctx), genericPlan, signal, tenant: ctx.reader, heavy, onSnapshot: snapshot }, work);
  }

  /**
   * Admission of a history read for memory: returns once the reader's share of the `history`
   * pool has HISTORY_PAGE_MIN_LEASE_BYTES free, waiting (with `wait`) up to
   * HISTORY_MEMORY_WAIT_MS for reads to give memory back; refused after that, or at once without
   * `wait`. Takes nothing: leaseRows() does, when the read runs.
   */
  private async rowsMemoryFree(reader: string | undefined, wait: boolean, signal: AbortSignal | undefined): Promise<void> {
    const pool = this.rowsMemory;
    if (pool === undefined) return;
    const deadline = Date.now() + (wait ? HISTORY_MEMORY_WAIT_MS : 0);
    for (;;) {
      if (pool.available(reader) >= HISTORY_PAGE_MIN_LEASE_BYTES) return;
      const left = deadline - Date.now();
      if (left <= 0 || signal?.aborted === true) {
        const reason = pool.available() < HISTORY_PAGE_MIN_LEASE_BYTES ? 'process' : 'key';
        pool.refused(reason);
        throw new MemoryRefusedError('history', reason);
      }
      await pool.released(left, signal);
    }
  }

  /**
   * The memory a running read's rows may take, from the reader's share of the `history` pool:
   * the whole HISTORY_PAGE_LEASE_BYTES when it is there, less (the page is then read in more
   * parts) when it is not, and HISTORY_PAGE_MIN_LEASE_BYTES past the pool when reads admitted
   * together took what admission saw free (at most that much per running read, as a part's one
   * row may pass it). Undefined when nothing bounds the rows.
   */
  private leaseRows(reader: string | undefined): MemoryLease | undefined {
    const pool = this.rowsMemory;
    if (pool === undefined) return undefined;
    const bytes = Math.min(HISTORY_PAGE_LEASE_BYTES, pool.available(reader));
    if (bytes >= HISTORY_PAGE_MIN_LEASE_BYTES) {
      const lease = pool.lease(bytes, reader);
      if (typeof lease !== 'string') return lease;
    }
    const least = new MemoryLease(pool, 0, reader);
    least.settle(HISTORY_PAGE_MIN_LEASE_BYTES);
    return least;
  }

  /**
   * A lease carried over to the next part of a page, grown back towards HISTORY_PAGE_LEASE_BYTES
   * with what the pool has now. It never waits: it holds at least one row's memory, and each part
   * carries at least one row, so the page always moves on.
   */
  private regrow(lease: MemoryLease): MemoryLease {
    lease.grow(HISTORY_PAGE_LEASE_BYTES - lease.bytes);
    return lease;
  }

  /**
   * What identical reads share: the path, the page (limit and offset), the filter as the client
   * wrote it, the community and channel scope, and the reader whenever the filter can match a
   * gated kind (its rows then depend on who reads). Not shared: reads of internal callers (no
   * context), `consistency: "strong"` reads, and any read by a reader with a write recent enough
   * to be owed read-your-writes: its own read decides its route.
   */
  private flightKey(scope: ReadScope, filter: NostrFilter, limit: number, ctx: HistoryContext | undefined): string | undefined {
    if (ctx === undefined || (ctx.honourConsistency === true && filter.extensions.consistency === 'strong')) return undefined;
    if (filterTerms(filter) > FLIGHT_MAX_TERMS) return undefined;
    if (ctx.reader !== undefined && this.routed.owedOwnWrites({ communityId: scope.communityId, pubkey: ctx.reader })) return undefined;
    const channels = scope.channels === 'any' ? 'any' : [...scope.channels].sort();
    const reader = canMatchGatedKind(filter) ? (scope.reader ?? ctx.reader ?? '') : '';
    const key = JSON.stringify([ctx.path, limit, ctx.offset ?? 0, scope.communityId, channels, scope.includeGlobal, reader, filter]);
    return key.length <= FLIGHT_MAX_KEY_CHARS ? key : undefined;
  }

  /** Channel-metadata reads and client-declared strong reads are served by the writer, unrouted. */
  private writerPinned(filter: NostrFilter, ctx: HistoryContext): boolean {
    return canMatchChannelMetadata(filter) || (ctx.honourConsistency === true && filter.extensions.consistency === 'strong');
  }
}

function author(scope: ReadScope, ctx: HistoryContext) {
  return ctx.reader === undefined ? undefined : { communityId: scope.communityId, pubkey: ctx.reader };
}

/**
 * A read that may cost its server much CPU: more than HEAVY_READ_TERMS values, unless every kind
 * it names is addressable (a NIP-29 client loading the group state of its many channels,
 * `kinds: [39000, …]` with a `#d` per channel, is a lookup per value on the addressable index).
 */
export function heavyRead(filter: NostrFilter): boolean {
  if (filter.kinds !== undefined && filter.kinds.length > 0 && filter.kinds.every(isAddressable)) return false;
  return filterTerms(filter) > HEAVY_READ_TERMS;
}

/** Whether the filter can match a kind whose rows only some readers may see (events/visibility.ts). */
function canMatchGatedKind(filter: NostrFilter): boolean {
  return filter.kinds === undefined || filter.kinds.some((k) => VISIBILITY_GATED_KINDS.has(k));
}

/** Design choice (database.md §2.2): no `kinds` list, or `kinds` containing 39000. */
export function canMatchChannelMetadata(filter: NostrFilter): boolean {
  return filter.kinds === undefined || filter.kinds.includes(CHANNEL_METADATA_KIND);
}

/**
 * The one channel a scope's SQL pins (`channel_id = any([X])`, no channel-less rows): the only
 * generic read shape that may mint a channel-scope proof. A multi-channel list is not a proof.
 */
export function pinnedChannel(scope: ReadScope): string | undefined {
  return scope.channels !== 'any' && scope.channels.length === 1 && !scope.includeGlobal ? scope.channels[0] : undefined;
}
