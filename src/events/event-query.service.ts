/**
 * History reads for REQ, COUNT and the HTTP bridge. One query per filter (NIP-01 OR
 * semantics), at most four in flight, results handed back strictly in filter order.
 *
 * Every read goes through the RoutedReader (database.md §2.2; docs/read-routing.md), which
 * serves it from the replica only when the replica session proves it is fresh enough, and
 * records one route decision per filter. Two kinds of read are pinned to the writer and record
 * no decision: filters that can match channel metadata (kind 39000, or no `kinds` at all), and
 * `/query` filters that carry `"consistency": "strong"`.
 */
import { Injectable } from '@nestjs/common';
import { Kysely } from 'kysely';
import { NostrEvent, NostrFilter } from '../common/nostr.types.js';
import { DB } from '../database/database.types.js';
import type { RoutePath } from '../metrics/database-metrics.service.js';
import { forQuery } from '../routing/route-predicate.js';
import { RoutedReader } from '../routing/routed-reader.service.js';
import { EventBus } from './event-bus.js';
import { EventReadRepository } from './event-read.repository.js';
import { effectiveLimit, matchFilter } from './filter.js';

export const FILTER_QUERY_CONCURRENCY = 4;
export const CHANNEL_METADATA_KIND = 39000;

export interface HistoryContext {
  /** Route-decision path label: `req_historical` / `bridge_query` for rows, `count_req` / `bridge_count` for counts. */
  readonly path: RoutePath;
  /** The authenticated reader; its own acknowledged writes are always visible (read-your-writes). */
  readonly reader?: string;
  /** `/query` only: honour `"consistency": "strong"` (serve that filter from the writer). */
  readonly honourConsistency?: boolean;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

@Injectable()
export class EventQueryService {
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
  async *history(communityId: string, filters: readonly NostrFilter[], dedupe: boolean, ctx: HistoryContext): AsyncGenerator<NostrEvent[]> {
    const seen = new Set<string>();
    const pending = new Map<number, Promise<NostrEvent[]>>();
    const start = (i: number) => pending.set(i, this.queryOne(communityId, filters[i], ctx));
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

  /** Sum over filters, without de-duplication (NIP-45). Counts route on the bounded arm only. */
  async count(communityId: string, filters: readonly NostrFilter[], ctx: HistoryContext): Promise<number> {
    const counts = await Promise.all(
      filters.map((f) => {
        if (f.kinds?.length === 0) return 0; // match-nothing: no connection, no route decision
        const channelId = pinnedChannel(f);
        const work = (db: Kysely<DB>) => this.repo.count(db, communityId, f, channelId);
        if (this.writerPinned(f, ctx)) return this.routed.onWriter('authorization', work);
        return this.routed.read({ path: ctx.path, predicate: { kind: 'bounded' }, span: 'count_events_routed', author: this.author(communityId, ctx) }, work);
      }),
    );
    return counts.reduce((a, b) => a + b, 0);
  }

  private queryOne(communityId: string, filter: NostrFilter, ctx: HistoryContext): Promise<NostrEvent[]> {
    const p = this.runQuery(communityId, filter, ctx);
    // Rejections are observed when awaited in order; keep them from being reported as unhandled meanwhile.
    p.catch(() => undefined);
    return p;
  }

  private async runQuery(communityId: string, filter: NostrFilter, ctx: HistoryContext): Promise<NostrEvent[]> {
    const limit = effectiveLimit(filter);
    if (limit <= 0 || filter.kinds?.length === 0) return []; // match-nothing: no connection, no route decision
    const channelId = pinnedChannel(filter);
    const work = (db: Kysely<DB>) => this.repo.query(db, communityId, filter, limit, channelId);
    if (this.writerPinned(filter, ctx)) return this.routed.onWriter('authorization', work);
    const predicate = forQuery({ channelId, until: filter.until }, this.routed.routingEnabled);
    return this.routed.read({ path: ctx.path, predicate, span: 'query_events_routed', author: this.author(communityId, ctx) }, work);
  }

  /** Channel-metadata reads and client-declared strong reads are served by the writer, unrouted. */
  private writerPinned(filter: NostrFilter, ctx: HistoryContext): boolean {
    return canMatchChannelMetadata(filter) || (ctx.honourConsistency === true && filter.extensions.consistency === 'strong');
  }

  private author(communityId: string, ctx: HistoryContext) {
    return ctx.reader === undefined ? undefined : { communityId, pubkey: ctx.reader };
  }
}

/** Design choice (database.md §2.2): no `kinds` list, or `kinds` containing 39000. */
export function canMatchChannelMetadata(filter: NostrFilter): boolean {
  return filter.kinds === undefined || filter.kinds.includes(CHANNEL_METADATA_KIND);
}

/** A single `#h` UUID pins that channel (relay.md §2.7); anything else pins nothing. */
export function pinnedChannel(filter: NostrFilter): string | undefined {
  const h = filter.tags.h;
  return h?.length === 1 && UUID.test(h[0]) ? h[0].toLowerCase() : undefined;
}
