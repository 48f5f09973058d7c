/**
 * History reads for REQ, COUNT and the HTTP bridge. One query per filter
 * (NIP-01 OR semantics), at most four in flight, results handed back strictly
 * in filter order. Until the replica fence proves freshness, every history read
 * is served by the writer: a replica read that cannot prove it is fresh enough
 * could show a client a history with holes.
 */
import { Injectable } from '@nestjs/common';
import { NostrEvent, NostrFilter } from '../common/nostr.types.js';
import { DatabaseService } from '../database/database.service.js';
import { EventReadRepository } from './event-read.repository.js';
import { ReadScope } from './read-scope.js';
import { effectiveLimit, matchFilter } from './filter.js';

export const FILTER_QUERY_CONCURRENCY = 4;

@Injectable()
export class EventQueryService {
  constructor(
    private readonly db: DatabaseService,
    private readonly repo: EventReadRepository,
  ) {}

  /**
   * Runs each filter and yields its accepted events in filter order. With
   * `dedupe`, an id already yielded by an earlier filter is skipped, after
   * acceptance, so a row rejected by filter A stays eligible for filter B.
   */
  async *history(scope: ReadScope, filters: readonly NostrFilter[], dedupe: boolean): AsyncGenerator<NostrEvent[]> {
    const seen = new Set<string>();
    const pending = new Map<number, Promise<NostrEvent[]>>();
    const start = (i: number) => pending.set(i, this.queryOne(scope, filters[i]));
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

  /** Sum over filters, without de-duplication (NIP-45). */
  async count(scope: ReadScope, filters: readonly NostrFilter[]): Promise<number> {
    const counts = await Promise.all(filters.map((f) => this.repo.count(this.db.writer, scope, f)));
    return counts.reduce((a, b) => a + b, 0);
  }

  private queryOne(scope: ReadScope, filter: NostrFilter): Promise<NostrEvent[]> {
    const p = this.repo.query(this.db.writer, scope, filter, effectiveLimit(filter));
    // Rejections are observed when awaited in order; keep them from being reported as unhandled meanwhile.
    p.catch(() => undefined);
    return p;
  }
}
