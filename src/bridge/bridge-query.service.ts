/**
 * `POST /query` dispatch (relay.md §3.3): each filter is served by exactly one
 * branch; the response is the branches' output in branch order, then filter
 * order. Database failures propagate to DatabaseErrorFilter, which maps them
 * to 503/500 once for every branch.
 */
import { Inject, Injectable } from '@nestjs/common';
import { ReadAccessService } from '../channels/read-access.service.js';
import { HttpError } from '../common/http-error.js';
import { NostrEvent, NostrFilter } from '../common/nostr.types.js';
import { RelaySigner } from '../common/relay-signer.js';
import { DatabaseService } from '../database/database.service.js';
import { EventQueryService } from '../events/event-query.service.js';
import { matchFilter } from '../events/filter.js';
import { ReadScope } from '../events/read-scope.js';
import { eventVisibleToReader } from '../events/visibility.js';
import { CommunityRepository } from '../tenancy/community.repository.js';
import { Branch, branchOf, clampLimit, feedTypes, searchParams, threadParams, windowParams } from './bridge-params.js';
import { BridgeReadsRepository } from './bridge-reads.repository.js';
import { SearchRepository } from '../events/search.repository.js';

export const AUX_KINDS = [5, 7, 9005, 40003];
export const AUX_SECOND_HOP_KINDS = [5, 9005];
const BRANCH_ORDER: readonly Branch[] = ['search', 'presence', 'window', 'feed', 'thread', 'catchall'];

export interface BridgeReader {
  readonly communityId: string;
  readonly pubkey: string;
}

@Injectable()
export class BridgeQueryService {
  constructor(
    private readonly db: DatabaseService,
    private readonly reads: BridgeReadsRepository,
    private readonly searches: SearchRepository,
    private readonly queries: EventQueryService,
    private readonly access: ReadAccessService,
    private readonly communities: CommunityRepository,
    @Inject(RelaySigner) private readonly signer: RelaySigner,
  ) {}

  async query(reader: BridgeReader, filters: NostrFilter[]): Promise<NostrEvent[]> {
    const branches = filters.map(branchOf);
    if (branches.includes('search') && branches.some((b) => b !== 'search')) {
      throw new HttpError(400, 'mixed search and non-search filters not supported');
    }
    const gate = this.access.gate(filters, reader.pubkey, 'count');
    if (gate) throw new HttpError(403, gate.reason);
    const out: NostrEvent[] = [];
    for (const branch of BRANCH_ORDER) {
      const seen = new Set<string>();
      for (let i = 0; i < filters.length; i++) {
        if (branches[i] !== branch) continue;
        const rows = await this.serve(branch, reader, filters[i]);
        // Search and feeds de-duplicate across their filters; the catch-all does not.
        for (const ev of rows) if (branch === 'catchall' || branch === 'window' || branch === 'thread' || (!seen.has(ev.id) && seen.add(ev.id))) out.push(ev);
      }
    }
    return out;
  }

  private async serve(branch: Branch, reader: BridgeReader, f: NostrFilter): Promise<NostrEvent[]> {
    const scope = await this.access.filterScope(reader.communityId, reader.pubkey, f);
    if (!scope) return [];
    const visible = (rows: NostrEvent[]) => rows.filter((ev) => eventVisibleToReader(ev, reader.pubkey));
    switch (branch) {
      case 'search':
        return this.search(reader, scope, f);
      case 'presence':
        // Presence lives in Redis (scale-out); with no shared presence store there is nothing to synthesise.
        return [];
      case 'window':
        return this.channelWindow(reader, scope, f);
      case 'feed':
        return visible(await this.feeds(reader, scope, f));
      case 'thread':
        return this.threadReplies(reader, scope, f);
      case 'catchall':
        return this.catchAll(reader, scope, f);
    }
  }

  private async catchAll(reader: BridgeReader, scope: ReadScope, f: NostrFilter): Promise<NostrEvent[]> {
    const out: NostrEvent[] = [];
    for await (const batch of this.queries.history(scope, [f], false, { path: 'bridge_query', reader: reader.pubkey, honourConsistency: true })) out.push(...batch.filter((ev) => eventVisibleToReader(ev, reader.pubkey)));
    return out;
  }

  private async channelWindow(reader: BridgeReader, scope: ReadScope, f: NostrFilter): Promise<NostrEvent[]> {
    const p = windowParams(f);
    const settings = await this.communities.settings(reader.communityId);
    const page = await this.reads.channelWindow(this.db.writer, reader.communityId, {
      channelId: p.channelId,
      limit: p.limit,
      kinds: f.kinds,
      cursor: p.cursor,
      repliesInChannel: settings.threadRepliesInChannel,
    });
    const hasMore = page.length > p.limit;
    const rows = visibleRows(page.slice(0, p.limit), reader.pubkey);
    const out = [...rows];
    if (p.includeAux && rows.length > 0) out.push(...(await this.auxClosure(reader, scope, rows.map((r) => r.id))));
    if (p.includeSummaries) out.push(...(await this.summaries(reader.communityId, rows, p.channelId)));
    const last = rows[rows.length - 1];
    const next = hasMore && last ? { created_at: last.created_at, id: last.id } : null;
    const position = p.cursor ? `${p.cursor.until}:${p.cursor.beforeId}` : 'head';
    out.push(
      this.signer.sign({
        kind: 39006,
        tags: [
          ['d', `${p.channelId}:${position}`],
          ['h', p.channelId],
        ],
        content: JSON.stringify({ has_more: next !== null, next_cursor: next, thread_replies_in_channel: settings.threadRepliesInChannel }),
      }),
    );
    return out;
  }

  /** First hop: reactions, deletions and edits of the rows; second hop: deletions of those. */
  private async auxClosure(reader: BridgeReader, scope: ReadScope, ids: string[]): Promise<NostrEvent[]> {
    const auxScope: ReadScope = { ...scope, includeGlobal: true };
    const first = visibleRows(await this.reads.referencing(this.db.writer, auxScope, ids, AUX_KINDS), reader.pubkey);
    const second = visibleRows(await this.reads.referencing(this.db.writer, auxScope, first.map((e) => e.id), AUX_SECOND_HOP_KINDS), reader.pubkey);
    const seen = new Set<string>(ids);
    return [...first, ...second].filter((e) => !seen.has(e.id) && seen.add(e.id));
  }

  private async summaries(communityId: string, rows: NostrEvent[], channelId: string): Promise<NostrEvent[]> {
    const found = await this.reads.threadSummaries(this.db.writer, communityId, rows);
    return found.map((s) =>
      this.signer.sign({
        kind: 39005,
        tags: [
          ['e', s.rootId],
          ['d', s.rootId],
          ['h', channelId],
        ],
        content: JSON.stringify({ reply_count: s.replyCount, descendant_count: s.descendantCount, last_reply_at: s.lastReplyAt, participants: s.participants }),
      }),
    );
  }

  private async feeds(reader: BridgeReader, scope: ReadScope, f: NostrFilter): Promise<NostrEvent[]> {
    let remaining = clampLimit(f.limit, 20, 100);
    const out: NostrEvent[] = [];
    for (const type of feedTypes(f)) {
      if (remaining <= 0) break;
      const rows =
        type === 'activity'
          ? await this.reads.activity(this.db.writer, scope, f.since, remaining)
          : await this.reads.mentions(this.db.writer, scope, reader.pubkey, f.since, remaining, type === 'needs_action');
      out.push(...rows);
      remaining -= rows.length;
    }
    return out;
  }

  private async threadReplies(reader: BridgeReader, scope: ReadScope, f: NostrFilter): Promise<NostrEvent[]> {
    const p = threadParams(f);
    const replies = visibleRows(await this.reads.threadReplies(this.db.writer, scope, p.rootId, p.depthLimit, p.cursor, p.limit), reader.pubkey);
    if (!p.includeAux) return replies;
    return [...replies, ...(await this.auxClosure(reader, scope, [p.rootId, ...replies.map((r) => r.id)]))];
  }

  private async search(reader: BridgeReader, scope: ReadScope, f: NostrFilter): Promise<NostrEvent[]> {
    const p = searchParams(f);
    const rows = await this.searches.search(this.db.writer, scope, p.text, p.prefix, f, p.limit, (p.page - 1) * p.limit);
    const { search: _ignored, ...plain } = f;
    return rows.filter((ev) => matchFilter(ev, plain) && eventVisibleToReader(ev, reader.pubkey));
  }
}

function visibleRows(rows: NostrEvent[], reader: string): NostrEvent[] {
  return rows.filter((ev) => eventVisibleToReader(ev, reader));
}
