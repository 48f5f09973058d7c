/**
 * NIP-45 COUNT for WebSocket `COUNT` and HTTP `/count` (relay.md §2.10, §3.8): the sum over the
 * filters, without de-duplication, of the rows the reader may see.
 *
 * A filter without `search` is counted in SQL (EventQueryService.count): its channel scope and the
 * reader's visibility rules are both conditions of the statement, so the count is exact. A
 * `search` filter cannot be counted that way (full-text relevance is not a NIP-01 condition), so
 * it takes the spec's fallback: at most COUNT_FALLBACK_MAX_ROWS + 1 candidate rows (the rows the
 * full-text match finds in the reader's scope and visibility), post-filtered by the rest of the
 * filter, and a filter with more candidates than that refused ({@link CountTooBroadError}) rather
 * than answered with a number that is not the count. Both numbers come from one statement
 * (SearchRepository.countMatches), a routed read on the bounded arm like any count, under the
 * fallback's path label; the relay reads no candidate row. Reading them in (up to 5,001 ids from
 * the search pool, then the rows by id) was what a flood of search COUNTs spent the relay's CPU on.
 */
import { Injectable } from '@nestjs/common';
import { NostrFilter } from '../nostr/nostr.types.js';
import { RelayMetrics } from '../metrics/relay-metrics.service.js';
import { EventQueryService, FILTER_QUERY_CONCURRENCY, HistoryContext } from './event-query.service.js';
import { matchesNothing } from '../nostr/filter.js';
import { ReadScope } from '../channels/read-scope.js';
import { SearchRepository } from './search.repository.js';

/** Candidate rows a fallback count may read (relay.md §2.10: "up to 5,001", more is refused). */
export const COUNT_FALLBACK_MAX_ROWS = 5000;

/** The spec's text; WS sends it after `restricted: `, HTTP as a 400 body. */
export const COUNT_TOO_BROAD_MESSAGE = 'count filter requires narrower constraints';

export class CountTooBroadError extends Error {
  constructor() {
    super(COUNT_TOO_BROAD_MESSAGE);
  }
}

export interface CountContext extends HistoryContext {
  readonly path: 'count_req' | 'bridge_count';
  readonly reader: string;
}

@Injectable()
export class CountService {
  constructor(
    private readonly queries: EventQueryService,
    private readonly search: SearchRepository,
    private readonly metrics: RelayMetrics,
  ) {}

  /**
   * At most FILTER_QUERY_CONCURRENCY filters are read at once, as for a REQ. Once one fails (shed,
   * refused for the key's share, too broad) the count has failed: no further filter is read, and
   * the reads already running finish unread. Started all at once, a flood's ten-filter COUNTs
   * kept the replica busy on nine reads each whose answer was already lost.
   */
  async count(scope: ReadScope, filters: readonly NostrFilter[], ctx: CountContext): Promise<number> {
    let total = 0;
    let next = 0;
    let failed = false;
    const reader = async () => {
      while (!failed && next < filters.length) {
        const f = filters[next++];
        try {
          // Read `total` only after the await: `total += await …` would add to a stale sum.
          const n = await (f.search === undefined ? this.queries.count(scope, [f], ctx) : this.fallback(scope, { ...f, search: f.search }, ctx));
          total += n;
        } catch (err) {
          failed = true;
          throw err;
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(FILTER_QUERY_CONCURRENCY, filters.length) }, reader));
    return total;
  }

  /** A full-text match reads an index entry per matching row however few are counted: always a heavy read. */
  private async fallback(scope: ReadScope, f: NostrFilter & { search: string }, ctx: CountContext): Promise<number> {
    if (matchesNothing(f)) return 0;
    const path = ctx.path === 'bridge_count' ? 'bridge_count_fallback' : 'count_req_fallback';
    const { candidates, matched } = await this.queries.countRead(scope, f, { ...ctx, path }, (db) => this.search.countMatches(db, scope, f, COUNT_FALLBACK_MAX_ROWS + 1), {
      heavy: true,
      span: 'query_events_routed_bounded',
    });
    if (candidates > COUNT_FALLBACK_MAX_ROWS) {
      this.metrics.countFallbackRejections.inc();
      throw new CountTooBroadError();
    }
    return matched;
  }
}
