/**
 * The `/query` window branch (NIP-CW): a page of a channel's timeline, with its aux closure, the
 * summaries of threads it shows and its bounds overlay. The page and its follow-ups share one read
 * session: one snapshot, one route decision (cursor pages covered, head pages bounded), and the
 * session is released however the request ends. `consistency: "strong"` pins the whole branch to
 * the writer.
 */
import { Inject, Injectable } from '@nestjs/common';
import { RoutedReader } from '@buzz-relay/read-path';
import { fromChannelCursor } from '@buzz-relay/read-path/internal';
import { ReadScope } from '../channels/read-scope.js';
import { RelaySigner } from '../common/relay-signer.js';
import { NostrEvent, NostrFilter } from '../nostr/nostr.types.js';
import { CommunityRepository } from '../tenancy/community.repository.js';
import { threadSummaryOverlay, windowBoundsOverlay } from '../threads/thread-overlays.js';
import { threadSummaries } from '../threads/thread-summaries.js';
import { windowParams } from './bridge-params.js';
import { BridgeReadsRepository } from './bridge-reads.repository.js';
import { auxClosure, BridgeReader, Runner, strong, visibleRows } from './query-rows.js';

@Injectable()
export class ChannelWindowService {
  constructor(
    private readonly reads: BridgeReadsRepository,
    private readonly communities: CommunityRepository,
    private readonly routed: RoutedReader,
    @Inject(RelaySigner) private readonly signer: RelaySigner,
  ) {}

  async serve(reader: BridgeReader, scope: ReadScope, f: NostrFilter): Promise<NostrEvent[]> {
    const p = windowParams(f);
    const settings = await this.communities.settings(reader.communityId);
    const query = { channelId: p.channelId, limit: p.limit, kinds: f.kinds, cursor: p.cursor, repliesInChannel: settings.threadRepliesInChannel, reader: reader.pubkey };
    const { page, session } = strong(f)
      ? { page: await this.routed.clientReadOnWriter('authorization', (db) => this.reads.channelWindow(db, reader.communityId, query), { tenant: reader.pubkey }), session: undefined }
      : await this.routed.session(
          { path: p.cursor ? 'channel_cursor' : 'channel_head', predicate: fromChannelCursor(p.channelId, p.cursor?.until), span: 'get_channel_window', tenant: reader.pubkey },
          (db) => this.reads.channelWindow(db, reader.communityId, query),
        );
    try {
      const run: Runner = session ? (work) => session.run(work) : (work) => this.routed.clientReadOnWriter('authorization', work, { tenant: reader.pubkey });
      const hasMore = page.length > p.limit;
      const rows = visibleRows(page.slice(0, p.limit), reader.pubkey);
      const out = [...rows];
      if (p.includeAux && rows.length > 0) out.push(...(await auxClosure(this.reads, reader.pubkey, scope, rows.map((r) => r.id), run)));
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

  private async summaries(communityId: string, rows: NostrEvent[], channelId: string, run: Runner): Promise<NostrEvent[]> {
    const roots = rows.map((r) => ({ id: r.id, createdAt: r.created_at }));
    const found = await run((db) => threadSummaries(db, communityId, roots, { repliedOnly: true }));
    return found.map((s) => threadSummaryOverlay(this.signer, s, channelId));
  }
}
