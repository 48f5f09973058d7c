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
 */
import { Injectable } from '@nestjs/common';
import { Kysely } from 'kysely';
import { NostrEvent, NostrFilter } from '../common/nostr.types.js';
import { DB } from '../database/database.types.js';
import type { RoutePath } from '../metrics/database-metrics.service.js';
import { forQuery } from '../routing/route-predicate.js';
import { RoutedReader } from '../routing/routed-reader.service.js';
import { HistoryReadRejectedError, ReadShareExceededError, WriterReadRejectedError } from '../database/database-errors.js';
import { EventBus } from './event-bus.js';
import { allStatementsGeneric } from './event-read.queries.js';
import { EventReadRepository } from './event-read.repository.js';
import { effectiveLimit, filterTerms, matchesNothing, matchFilter } from './filter.js';
import { HistoryFlights } from './history-flights.js';
import { VISIBILITY_GATED_KINDS } from './kinds.js';
import { ReadScope } from './read-scope.js';

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
}

@Injectable()
export class EventQueryService {
  // A flight refused for its starter's share is shed for its joiners too: they try under their own.
  private readonly flights = new HistoryFlights(
    (err) => err instanceof HistoryReadRejectedError || err instanceof WriterReadRejectedError || err instanceof ReadShareExceededError,
  );

  constructor(
    private readonly routed: RoutedReader,
    private readonly repo: EventReadRepository,
    bus: EventBus,
  ) {
    // The bus publishes a stored event after its COMMIT returned and before the OK is sent.
    bus.subscribe((p) => this.routed.writes.noteWrite({ communityId: p.communityId, pubkey: p.event.pubkey }));
  }

  /**
   * Runs each filter and yields its accepted events in filter order. With
   * `dedupe`, an id already yielded by an earlier filter is skipped, after
   * acceptance, so a row rejected by filter A stays eligible for filter B.
   */
  async *history(scope: ReadScope, filters: readonly NostrFilter[], dedupe: boolean, ctx?: HistoryContext): AsyncGenerator<NostrEvent[]> {
    const seen = new Set<string>();
    const pending = new Map<number, Promise<NostrEvent[]>>();
    const start = (i: number) => pending.set(i, this.queryOne(scope, filters[i], ctx));
    let next = 0;
    for (; next < Math.min(FILTER_QUERY_CONCURRENCY, filters.length); next++) start(next);
    for (let i = 0; i < filters.length; i++) {
      const rows = await pending.get(i)!;
      pending.delete(i);
      if (next < filters.length) start(next++);
      const accepted = rows.filter((ev) => matchFilter(ev, filters[i]) && (!dedupe || (!seen.has(ev.id) && seen.add(ev.id))));
      yield accepted;
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
        const work = (db: Kysely<DB>) => this.repo.count(db, scope, f);
        if (ctx === undefined || this.writerPinned(f, ctx)) return this.routed.writerRead('authorization', work, { span: 'count_events', signal: ctx?.signal, tenant: ctx?.reader });
        return this.routed.read({ path: ctx.path, predicate: { kind: 'bounded' }, span: 'count_events_routed', author: author(scope, ctx), signal: ctx.signal, tenant: ctx.reader }, work);
      }),
    );
    return counts.reduce((a, b) => a + b, 0);
  }

  private queryOne(scope: ReadScope, filter: NostrFilter, ctx: HistoryContext | undefined): Promise<NostrEvent[]> {
    const p = this.runQuery(scope, filter, ctx);
    // Rejections are observed when awaited in order; keep them from being reported as unhandled meanwhile.
    p.catch(() => undefined);
    return p;
  }

  /**
   * One filter's page. Identical reads waiting at the same time share one database read
   * (HistoryFlights; flightKey says what may share).
   */
  private async runQuery(scope: ReadScope, filter: NostrFilter, ctx: HistoryContext | undefined): Promise<NostrEvent[]> {
    const limit = effectiveLimit(filter);
    if (limit <= 0 || matchesNothing(filter)) return []; // no permit, no connection, no route decision
    return this.flights.run(this.flightKey(scope, filter, limit, ctx), ctx?.signal, (signal, started) => {
      const work = (db: Kysely<DB>) => {
        started();
        return this.repo.query(db, scope, filter, limit, ctx?.offset);
      };
      if (ctx === undefined || this.writerPinned(filter, ctx)) return this.routed.writerRead('authorization', work, { span: 'query_events', signal, tenant: ctx?.reader });
      const predicate = forQuery({ channelId: pinnedChannel(scope), until: filter.until }, this.routed.routingEnabled);
      const genericPlan = allStatementsGeneric(scope, filter, ctx.offset ?? 0);
      return this.routed.read({ path: ctx.path, predicate, span: 'query_events_routed', author: author(scope, ctx), genericPlan, signal, tenant: ctx.reader }, work);
    });
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
    if (ctx.reader !== undefined && this.routed.writes.lastWriteAt({ communityId: scope.communityId, pubkey: ctx.reader }) !== undefined) return undefined;
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
