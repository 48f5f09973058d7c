/**
 * NIP-50 search: full-text matching returns ids and ranks only, on the search pool
 * (the replica when configured), outside the fence and behind its own gate
 * (SearchGate); every hit is hydrated through the fenced, routed by-id read, so no
 * unproved row is ever shown. The hydration is a history read: capped and shed like
 * the others.
 */
import { matchesNothing } from '../nostr/filter.js';
import { Injectable } from '@nestjs/common';
import { NostrEvent, NostrFilter } from '../nostr/nostr.types.js';
import type { RoutePath } from '@buzz-relay/read-path';
import { BOUNDED, RoutedReader } from '@buzz-relay/read-path';
import { ReadScope } from '../channels/read-scope.js';
import { SearchGate } from './search-gate.js';
import { SearchRepository } from './search.repository.js';

export interface SearchRequest {
  readonly text: string;
  readonly prefix: boolean;
  readonly filter: NostrFilter;
  readonly limit: number;
  readonly offset: number;
  readonly path: Extract<RoutePath, 'req_search_hydrate' | 'bridge_search_hydrate'>;
  readonly reader: string;
  /** `consistency: "strong"`: hydrate on the writer, unrouted. */
  readonly strong?: boolean;
}

@Injectable()
export class SearchService {
  constructor(
    private readonly repo: SearchRepository,
    private readonly routed: RoutedReader,
    private readonly gate: SearchGate,
  ) {}

  async search(scope: ReadScope, req: SearchRequest): Promise<NostrEvent[]> {
    if (matchesNothing(req.filter)) return [];
    const ids = await this.gate.match(req.path, (db) => this.repo.matchIds(db, scope, req.text, req.prefix, req.filter, req.limit, req.offset), req.reader);
    if (ids.length === 0) return [];
    const hydrate = (db: Parameters<SearchRepository['byIds']>[0]) => this.repo.byIds(db, scope.communityId, ids);
    if (req.strong) return this.routed.clientReadOnWriter('authorization', hydrate, { tenant: req.reader });
    return this.routed.read(
      { path: req.path, predicate: BOUNDED, span: 'get_events_by_ids_routed', author: { communityId: scope.communityId, pubkey: req.reader }, tenant: req.reader },
      hydrate,
    );
  }
}
