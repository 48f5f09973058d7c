/**
 * NIP-45 COUNT for WebSocket `COUNT` and HTTP `/count` (relay.md §2.10, §3.8): the sum over the
 * filters, without de-duplication, of the rows the reader may see.
 *
 * A filter without `search` is counted in SQL (EventQueryService.count): its channel scope and the
 * reader's visibility rules are both conditions of the statement, so the count is exact. A
 * `search` filter cannot be counted that way (full-text relevance is not a NIP-01 condition), so
 * it takes the spec's fallback: read at most COUNT_FALLBACK_MAX_ROWS + 1 candidate rows through
 * the search path (which applies the same visibility rules in SQL), post-filter them with the
 * NIP-01 match and the per-event rule, and refuse a filter with more candidates than that
 * ({@link CountTooBroadError}) rather than answer a number that is not the count.
 */
import { Injectable } from '@nestjs/common';
import { NostrFilter } from '../common/nostr.types.js';
import { RelayMetrics } from '../metrics/relay-metrics.service.js';
import { EventQueryService, HistoryContext } from './event-query.service.js';
import { matchesNothing, matchFilter } from './filter.js';
import { ReadScope } from './read-scope.js';
import { SearchService } from './search.service.js';
import { eventVisibleToReader } from './visibility.js';

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
    private readonly search: SearchService,
    private readonly metrics: RelayMetrics,
  ) {}

  async count(scope: ReadScope, filters: readonly NostrFilter[], ctx: CountContext): Promise<number> {
    const counts = await Promise.all(filters.map((f) => (f.search === undefined ? this.queries.count(scope, [f], ctx) : this.fallback(scope, f, ctx))));
    return counts.reduce((a, b) => a + b, 0);
  }

  private async fallback(scope: ReadScope, f: NostrFilter, ctx: CountContext): Promise<number> {
    if (matchesNothing(f)) return 0;
    const rows = await this.search.search(scope, {
      text: f.search ?? '',
      prefix: false,
      filter: f,
      limit: COUNT_FALLBACK_MAX_ROWS + 1,
      offset: 0,
      path: ctx.path === 'bridge_count' ? 'bridge_count_fallback' : 'count_req_fallback',
      reader: ctx.reader,
    });
    if (rows.length > COUNT_FALLBACK_MAX_ROWS) {
      this.metrics.countFallbackRejections.inc();
      throw new CountTooBroadError();
    }
    const { search: _text, ...plain } = f;
    return rows.filter((ev) => matchFilter(ev, plain) && eventVisibleToReader(ev, ctx.reader)).length;
  }
}
