/**
 * `POST /query` dispatch (relay.md §3.3): each filter is served by exactly one
 * branch; the response is the branches' output in branch order, then filter
 * order. Database failures propagate to HttpErrorFilter, which maps them
 * to 503/500 once for every branch, except thread windows (ThreadWindowService),
 * which answer with their own strings.
 */
import { Injectable } from '@nestjs/common';
import { Kysely } from 'kysely';
import { BOUNDED, ChannelScope, DB, RoutedReader, RouteRequest } from '@buzz-relay/read-path';
import { ReadAccessService } from '../channels/read-access.service.js';
import { HttpError } from '../common/http-error.js';
import { NostrEvent, NostrFilter } from '../nostr/nostr.types.js';
import { EventQueryService } from '../events/event-query.service.js';
import { matchFilter } from '../nostr/filter.js';
import { channelDecidesH } from '../events/event-read.queries.js';
import { ReadScope } from '../channels/read-scope.js';
import { eventVisibleToReader } from '../events/visibility.js';
import {
  Branch,
  branchOf,
  catchAllParams,
  clampLimit,
  feedTypes,
  searchParams,
  threadParams,
  threadWindowRequest,
  validateExtensions,
} from './bridge-params.js';
import { ThreadWindowService } from './thread-window.service.js';
import { BridgeReadsRepository } from './bridge-reads.repository.js';
import { refusalError } from './refusal-status.js';
import { SearchService } from '../events/search.service.js';
import { MemoryLease } from '../memory/memory-budget.js';
import { BridgePresence } from './bridge-presence.service.js';
import { ChannelWindowService } from './channel-window.service.js';
import { holdAnswer } from './query-answer-memory.js';
import { auxClosure, BridgeReader, Runner, strong, visibleRows } from './query-rows.js';

const BRANCH_ORDER: readonly Branch[] = ['search', 'presence', 'window', 'feed', 'thread', 'catchall'];

@Injectable()
export class BridgeQueryService {
  constructor(
    private readonly reads: BridgeReadsRepository,
    private readonly searches: SearchService,
    private readonly queries: EventQueryService,
    private readonly access: ReadAccessService,
    private readonly routed: RoutedReader,
    private readonly windows: ThreadWindowService,
    private readonly channelWindows: ChannelWindowService,
    private readonly presence: BridgePresence,
  ) {}

  /**
   * `answer`: the answer's lease (QueryAnswerMemory), to which each part's rows are added as they
   * are kept; a part that does not fit refuses the request (MemoryRefusedError, or 400).
   */
  async query(reader: BridgeReader, filters: NostrFilter[], answer?: MemoryLease): Promise<NostrEvent[]> {
    const branches = filters.map(branchOf);
    if (branches.includes('search') && branches.some((b) => b !== 'search')) {
      throw new HttpError(400, 'mixed search and non-search filters not supported');
    }
    validateExtensions(filters, branches);
    const gate = this.access.gate(filters, reader.pubkey, 'count');
    if (gate) throw refusalError(gate.reason);
    const windowed = await this.threadWindows(reader, filters, branches);
    const out: NostrEvent[] = [];
    for (const branch of BRANCH_ORDER) {
      const seen = new Set<string>();
      for (let i = 0; i < filters.length; i++) {
        if (branches[i] !== branch) continue;
        const rows = windowed.get(i) ?? (await this.serve(branch, reader, filters[i], answer));
        // The catch-all holds its rows as it reads them; every other branch's rows are bounded by its own limits.
        if (branch !== 'catchall') holdAnswer(answer, rows);
        // Search and feeds de-duplicate across their filters; the catch-all does not.
        for (const ev of rows) if (branch === 'catchall' || branch === 'window' || branch === 'thread' || (!seen.has(ev.id) && seen.add(ev.id))) out.push(ev);
      }
    }
    return out;
  }

  private async serve(branch: Branch, reader: BridgeReader, f: NostrFilter, answer: MemoryLease | undefined): Promise<NostrEvent[]> {
    const scope = await this.access.filterScope(reader.communityId, reader.pubkey, f);
    if (!scope) return [];
    const visible = (rows: NostrEvent[]) => rows.filter((ev) => eventVisibleToReader(ev, reader.pubkey));
    switch (branch) {
      case 'search':
        return this.search(reader, scope, f);
      case 'presence':
        return this.presence.events(reader.communityId, f);
      case 'window':
        return this.channelWindows.serve(reader, scope, f);
      case 'feed':
        return visible(await this.feeds(reader, scope, f));
      case 'thread':
        return this.threadReplies(reader, scope, f);
      case 'catchall':
        return this.catchAll(reader, scope, f, answer);
    }
  }

  /**
   * The catch-all's page, read in the parts the history memory lease allows (as for a REQ). Each
   * part's rows are added to the answer's lease before the read lets go of them, so a page larger
   * than the reader's share of the pool is refused (HTTP 429, or 503 when the pool is full) rather
   * than built whole.
   */
  private async catchAll(reader: BridgeReader, scope: ReadScope, f: NostrFilter, answer: MemoryLease | undefined): Promise<NostrEvent[]> {
    const out: NostrEvent[] = [];
    const ctx = { path: 'bridge_query' as const, reader: reader.pubkey, honourConsistency: true, offset: catchAllParams(f).offset, signal: reader.signal };
    for await (const batch of this.queries.history(scope, [f], false, ctx)) {
      const rows = batch.events.filter((ev) => eventVisibleToReader(ev, reader.pubkey));
      holdAnswer(answer, rows);
      out.push(...rows);
    }
    return out;
  }

  private async feeds(reader: BridgeReader, scope: ReadScope, f: NostrFilter): Promise<NostrEvent[]> {
    let remaining = clampLimit(f.limit, 20, 100);
    const out: NostrEvent[] = [];
    for (const type of feedTypes(f)) {
      if (remaining <= 0) break;
      const limit = remaining;
      const work = (db: Kysely<DB>) =>
        type === 'activity' ? this.reads.activity(db, scope, f.since, limit) : this.reads.mentions(db, scope, reader.pubkey, f.since, limit, type === 'needs_action');
      const rows = await this.readFor(f, { path: 'bridge_feed', predicate: BOUNDED, span: `query_feed_${type}_routed`, author: reader, tenant: reader.pubkey }, work);
      out.push(...rows);
      remaining -= rows.length;
    }
    return out;
  }

  /**
   * The request's thread windows (relay.md §3.6b), served together under one deadline, one
   * budget and one authorization read before and after: their output by filter index.
   */
  private async threadWindows(reader: BridgeReader, filters: readonly NostrFilter[], branches: readonly Branch[]): Promise<Map<number, NostrEvent[]>> {
    const jobs = filters.flatMap((f, i) => {
      const window = branches[i] === 'thread' ? threadWindowRequest(f) : undefined;
      return window ? [{ i, job: { filter: f, thread: threadParams(f), window } }] : [];
    });
    if (jobs.length === 0) return new Map();
    const outputs = await this.windows.serve(reader, jobs.map((j) => j.job));
    return new Map(jobs.map((j, k) => [j.i, outputs[k]]));
  }

  private async threadReplies(reader: BridgeReader, scope: ReadScope, f: NostrFilter): Promise<NostrEvent[]> {
    const p = threadParams(f);
    const work = (db: Kysely<DB>) => this.reads.threadReplies(db, scope, p.rootId, p.depthLimit, p.cursor, p.limit);
    // Forward cursor pages have no upper bound to pre-check: served from the replica only when
    // full and entirely at or below the proved fence wall (else the thread_eof writer re-run).
    const request: RouteRequest = p.cursor
      ? { path: 'thread_cursor', predicate: { kind: 'covered_post_verified', proof: ChannelScope.threadJoin() }, span: 'get_thread_replies', tenant: reader.pubkey }
      : { path: 'thread_head', predicate: BOUNDED, span: 'get_thread_replies', author: reader, tenant: reader.pubkey };
    const postVerify = (page: NostrEvent[], entry: { fenceWall: number }) =>
      page.length >= p.limit && (page.length === 0 || page[page.length - 1].created_at * 1000 <= entry.fenceWall);
    const page = strong(f) ? await this.routed.clientReadOnWriter('authorization', work, { tenant: reader.pubkey }) : await this.routed.read(request, work, p.cursor ? postVerify : undefined);
    const replies = visibleRows(page, reader.pubkey);
    if (!p.includeAux) return replies;
    const run: Runner = (w) => this.readFor(f, { path: 'bridge_thread_aux', predicate: BOUNDED, span: 'thread_window_aux', tenant: reader.pubkey }, w);
    return [...replies, ...(await auxClosure(this.reads, reader.pubkey, scope, [p.rootId, ...replies.map((r) => r.id)], run))];
  }

  /** A routed read, or the writer when the filter asks for `consistency: "strong"`. */
  private readFor<T>(f: NostrFilter, req: Omit<RouteRequest, 'author'> & { author?: BridgeReader }, work: (db: Kysely<DB>) => Promise<T>): Promise<T> {
    if (strong(f)) return this.routed.clientReadOnWriter('authorization', work, { tenant: req.tenant });
    const author = req.author ? { communityId: req.author.communityId, pubkey: req.author.pubkey } : undefined;
    return this.routed.read({ ...req, author }, work);
  }

  private async search(reader: BridgeReader, scope: ReadScope, f: NostrFilter): Promise<NostrEvent[]> {
    const p = searchParams(f);
    const rows = await this.searches.search(scope, {
      text: p.text,
      prefix: p.prefix,
      filter: f,
      limit: p.limit,
      offset: (p.page - 1) * p.limit,
      path: 'bridge_search_hydrate',
      reader: reader.pubkey,
      strong: strong(f),
    });
    const { search: _ignored, ...plain } = f;
    // The match already kept a channel-scoped `#h` to its channels (SearchRepository).
    const hDecided = channelDecidesH(scope, f) ? 'h-decided' : undefined;
    return rows.filter((ev) => matchFilter(ev, plain, hDecided) && eventVisibleToReader(ev, reader.pubkey));
  }
}
