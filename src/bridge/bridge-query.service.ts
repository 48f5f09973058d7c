/**
 * `POST /query` dispatch (relay.md §3.3): each filter is served by exactly one
 * branch; the response is the branches' output in branch order, then filter
 * order. Database failures propagate to HttpErrorFilter, which maps them
 * to 503/500 once for every branch, except thread windows (ThreadWindowService),
 * which answer with their own strings.
 */
import { Inject, Injectable, Optional } from '@nestjs/common';
import { Kysely } from 'kysely';
import { BOUNDED, ChannelScope, DB, RoutedReader, RouteRequest } from '@buzz-relay/read-path';
import { ReadAccessService } from '../channels/read-access.service.js';
import { HttpError } from '../common/http-error.js';
import { NostrEvent, NostrFilter } from '../nostr/nostr.types.js';
import { RelaySigner } from '../common/relay-signer.js';
import { EventQueryService, HISTORY_PAGE_LEASE_BYTES } from '../events/event-query.service.js';
import { matchFilter } from '../nostr/filter.js';
import { channelDecidesH } from '../events/event-read.queries.js';
import { ReadScope } from '../channels/read-scope.js';
import { eventVisibleToReader } from '../events/visibility.js';
import { fromChannelCursor } from '@buzz-relay/read-path/internal';
import { CommunityRepository } from '../tenancy/community.repository.js';
import {
  AUX_KINDS,
  AUX_SECOND_HOP_KINDS,
  Branch,
  branchOf,
  catchAllParams,
  clampLimit,
  feedTypes,
  searchParams,
  threadParams,
  threadWindowRequest,
  validateExtensions,
  windowParams,
} from './bridge-params.js';
import { ThreadWindowService } from './thread-window.service.js';
import { BridgeReadsRepository } from './bridge-reads.repository.js';
import { refusalError } from './refusal-status.js';
import { SearchService } from '../events/search.service.js';
import { eventHeapBytes } from '../events/stored-event.js';
import { MemoryBudget, MemoryLease, MemoryPool, MemoryRefusedError } from '../memory/memory-budget.js';
import { PresenceService, PresenceUnavailableError } from '../redis/presence.service.js';
import { threadSummaryOverlay, windowBoundsOverlay } from '../threads/thread-overlays.js';
import { threadSummaries } from '../threads/thread-summaries.js';

export { AUX_KINDS, AUX_SECOND_HOP_KINDS };
const BRANCH_ORDER: readonly Branch[] = ['search', 'presence', 'window', 'feed', 'thread', 'catchall'];

export interface BridgeReader {
  readonly communityId: string;
  readonly pubkey: string;
  /** Aborted when the HTTP client went away before its answer: the catch-all read is cancelled. */
  readonly signal?: AbortSignal;
}

@Injectable()
export class BridgeQueryService {
  /** The memory a `/query` answer holds from its first rows until its response is written (absent: unbounded). */
  private readonly answerMemory: MemoryPool | undefined;

  constructor(
    private readonly reads: BridgeReadsRepository,
    private readonly searches: SearchService,
    private readonly queries: EventQueryService,
    private readonly access: ReadAccessService,
    private readonly communities: CommunityRepository,
    private readonly routed: RoutedReader,
    private readonly windows: ThreadWindowService,
    @Inject(RelaySigner) private readonly signer: RelaySigner,
    private readonly presence: PresenceService,
    @Optional() memory?: MemoryBudget,
  ) {
    this.answerMemory = memory?.pool('history');
  }

  /**
   * An empty lease on the reader's share of the `history` pool for one `/query` answer: query()
   * adds each part's rows as it keeps them (refusing the request with MemoryRefusedError when they
   * do not fit) and the caller ends it when the response has been written.
   */
  answerLease(pubkey: string): MemoryLease | undefined {
    return this.answerMemory && new MemoryLease(this.answerMemory, 0, pubkey);
  }

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
        if (branch !== 'catchall') hold(answer, rows);
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
        return this.presenceEvents(reader, f);
      case 'window':
        return this.channelWindow(reader, scope, f);
      case 'feed':
        return visible(await this.feeds(reader, scope, f));
      case 'thread':
        return this.threadReplies(reader, scope, f);
      case 'catchall':
        return this.catchAll(reader, scope, f, answer);
    }
  }

  /**
   * Presence synthesis (relay.md §3.3 step 2): one relay-signed kind-20001 event per pubkey in
   * `authors` with a live presence entry, its content the stored status; no `authors`, nothing.
   * The subject is named by a `p` tag. An unreachable presence store is a 503, not "nobody is here".
   */
  private async presenceEvents(reader: BridgeReader, f: NostrFilter): Promise<NostrEvent[]> {
    try {
      const live = await this.presence.lookup(reader.communityId, f.authors ?? []);
      return live.map(({ pubkey, status }) => this.signer.sign({ kind: 20001, tags: [['p', pubkey]], content: status }));
    } catch (err) {
      if (err instanceof PresenceUnavailableError) throw new HttpError(503, 'presence unavailable');
      throw err;
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
      hold(answer, rows);
      out.push(...rows);
    }
    return out;
  }

  /**
   * NIP-CW window. The page and its aux/summary follow-ups share one read session:
   * one snapshot, one route decision (cursor pages covered, head pages bounded), and
   * the session is released however the request ends. `consistency: "strong"` pins
   * the whole branch to the writer.
   */
  private async channelWindow(reader: BridgeReader, scope: ReadScope, f: NostrFilter): Promise<NostrEvent[]> {
    const p = windowParams(f);
    const settings = await this.communities.settings(reader.communityId);
    const query = { channelId: p.channelId, limit: p.limit, kinds: f.kinds, cursor: p.cursor, repliesInChannel: settings.threadRepliesInChannel, reader: reader.pubkey };
    const { page, session } = strong(f)
      ? { page: await this.routed.writerRead('authorization', (db) => this.reads.channelWindow(db, reader.communityId, query), { tenant: reader.pubkey }), session: undefined }
      : await this.routed.session(
          { path: p.cursor ? 'channel_cursor' : 'channel_head', predicate: fromChannelCursor(p.channelId, p.cursor?.until), span: 'get_channel_window', tenant: reader.pubkey },
          (db) => this.reads.channelWindow(db, reader.communityId, query),
        );
    try {
      const run: Runner = session ? (work) => session.run(work) : (work) => this.routed.writerRead('authorization', work, { tenant: reader.pubkey });
      const hasMore = page.length > p.limit;
      const rows = visibleRows(page.slice(0, p.limit), reader.pubkey);
      const out = [...rows];
      if (p.includeAux && rows.length > 0) out.push(...(await this.auxClosure(reader, scope, rows.map((r) => r.id), run)));
      if (p.includeSummaries) out.push(...(await this.summaries(reader.communityId, rows, p.channelId, run)));
      out.push(this.boundsOverlay(p.channelId, p.cursor, rows, hasMore, settings.threadRepliesInChannel));
      return out;
    } finally {
      session?.release();
    }
  }

  private boundsOverlay(channelId: string, cursor: { until: number; beforeId: string } | undefined, rows: NostrEvent[], hasMore: boolean, repliesInChannel: boolean): NostrEvent {
    return windowBoundsOverlay(this.signer, {
      anchor: channelId,
      position: cursor && `${cursor.until}:${cursor.beforeId}`,
      channelId,
      hasMore,
      last: rows[rows.length - 1],
      content: (bounds) => ({ ...bounds, thread_replies_in_channel: repliesInChannel }),
    });
  }

  /** First hop: reactions, deletions and edits of the rows; second hop: deletions of those. */
  private async auxClosure(reader: BridgeReader, scope: ReadScope, ids: string[], run: Runner): Promise<NostrEvent[]> {
    const auxScope: ReadScope = { ...scope, includeGlobal: true };
    const first = visibleRows(await run((db) => this.reads.referencing(db, auxScope, ids, AUX_KINDS)), reader.pubkey);
    const second = visibleRows(await run((db) => this.reads.referencing(db, auxScope, first.map((e) => e.id), AUX_SECOND_HOP_KINDS)), reader.pubkey);
    const seen = new Set<string>(ids);
    return [...first, ...second].filter((e) => !seen.has(e.id) && seen.add(e.id));
  }

  private async summaries(communityId: string, rows: NostrEvent[], channelId: string, run: Runner): Promise<NostrEvent[]> {
    const roots = rows.map((r) => ({ id: r.id, createdAt: r.created_at }));
    const found = await run((db) => threadSummaries(db, communityId, roots, { repliedOnly: true }));
    return found.map((s) => threadSummaryOverlay(this.signer, s, channelId));
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
    const page = strong(f) ? await this.routed.writerRead('authorization', work, { tenant: reader.pubkey }) : await this.routed.read(request, work, p.cursor ? postVerify : undefined);
    const replies = visibleRows(page, reader.pubkey);
    if (!p.includeAux) return replies;
    const run: Runner = (w) => this.readFor(f, { path: 'bridge_thread_aux', predicate: BOUNDED, span: 'thread_window_aux', tenant: reader.pubkey }, w);
    return [...replies, ...(await this.auxClosure(reader, scope, [p.rootId, ...replies.map((r) => r.id)], run))];
  }

  /** A routed read, or the writer when the filter asks for `consistency: "strong"`. */
  private readFor<T>(f: NostrFilter, req: Omit<RouteRequest, 'author'> & { author?: BridgeReader }, work: (db: Kysely<DB>) => Promise<T>): Promise<T> {
    if (strong(f)) return this.routed.writerRead('authorization', work, { tenant: req.tenant });
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

type Runner = <T>(work: (db: Kysely<DB>) => Promise<T>) => Promise<T>;

function strong(f: NostrFilter): boolean {
  return f.extensions.consistency === 'strong';
}

function visibleRows(rows: NostrEvent[], reader: string): NostrEvent[] {
  return rows.filter((ev) => eventVisibleToReader(ev, reader));
}

/** The answer to a `/query` whose rows alone pass the reader's share of the history pool: retrying cannot help. */
export const ANSWER_TOO_LARGE = 'answer too large: ask for fewer events (a smaller limit, or page through them)';

/**
 * Adds rows to a `/query` answer's memory lease, or refuses the request when they do not fit:
 * 400 when the answer and the lease of the read still running for it are more than a key may
 * ever hold (no retry can succeed), else the memory refusal (429 or 503, `Retry-After`).
 */
function hold(answer: MemoryLease | undefined, rows: readonly NostrEvent[]): void {
  if (answer === undefined || rows.length === 0) return;
  const bytes = rows.reduce((sum, ev) => sum + eventHeapBytes(ev), 0);
  const refused = answer.add(bytes);
  if (refused === undefined) return;
  if (answer.bytes + bytes + HISTORY_PAGE_LEASE_BYTES > answer.keyLimit) throw new HttpError(400, ANSWER_TOO_LARGE);
  throw new MemoryRefusedError('history', refused);
}
