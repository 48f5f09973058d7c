/**
 * NIP-CW thread windows (relay.md §3.6b; database.md §2.2, §2.8): the `thread_window` opt-in of
 * the thread-replies branch. Each window walks a thread's replies from the newest towards older
 * ones and emits its rows, optionally their aux closure, and one relay-signed bounds overlay.
 *
 * For the whole request: the windows' authorization is read on the writer before they run and
 * again after (a change is a 503, so a window never shows rows of a channel the reader just
 * lost), one 8 s deadline and one scan budget cover every statement, and the response must fit
 * in 8 MiB. Failures keep this path's own strings (thread-window.budget.ts): they leave wrapped
 * in an OwnWordingFailure, and the one HTTP filter answers them in those words.
 *
 * Routing: one RoutedReader session per window (`thread_window_cursor`: covered by the cursor;
 * `thread_window_head`: bounded), page and aux closure on one proved snapshot. A root missing on
 * the replica (`writer/missing_root`), or any other replica error (`writer/replica_error`), re-runs
 * on the writer; a replica statement or lock timeout is surfaced, never re-run.
 */
import { channelIdsOf } from '../nostr/group-id.js';
import { Inject, Injectable } from '@nestjs/common';
import { Kysely, sql } from 'kysely';
import { RelaySigner } from '../common/relay-signer.js';
import { ChannelRepository } from '../channels/channel.repository.js';
import { HttpError } from '../common/http-error.js';
import { NostrEvent, NostrFilter } from '../nostr/nostr.types.js';
import { DatabaseMetrics, DB, LockTimedOutError, OwnWordingFailure, RoutedReader } from '@buzz-relay/read-path';
import { datastoreSpan, fromChannelCursor, histogram, withStatementDeadline } from '@buzz-relay/read-path/internal';
import { ReadScope } from '../channels/read-scope.js';
import { eventVisibleToReader } from '../events/visibility.js';
import { AUX_KINDS, AUX_SECOND_HOP_KINDS, ThreadParams, ThreadWindowRequest } from './bridge-params.js';
import type { BridgeReader } from './query-rows.js';
import {
  MAX_RESPONSE_BYTES,
  RequestDeadline,
  ScanBudget,
  THREAD_AUTH_CHANGED_MESSAGE,
  THREAD_BYTES_MESSAGE,
  THREAD_TIMEOUT_MESSAGE,
  THREAD_WINDOW_LOCK_TIMEOUT_MS,
} from './thread-window.budget.js';
import { ScannedRows, ThreadWindowQuery, ThreadWindowRepository, WindowCursor } from './thread-window.repository.js';
import { windowBoundsOverlay } from '../threads/thread-overlays.js';

export const AUX_TARGET_BATCH = 200;
export const AUX_PAGE = 1000;

export interface WindowJob {
  readonly filter: NostrFilter;
  readonly thread: ThreadParams;
  readonly window: ThreadWindowRequest;
}

type Runner = <T>(work: (db: Kysely<DB>) => Promise<T>) => Promise<T>;

interface OpenedPage {
  readonly page: ScannedRows | undefined;
  readonly run: Runner;
  release(): void;
}

@Injectable()
export class ThreadWindowService {
  private readonly responseBytes = histogram({
    name: 'buzz_thread_window_response_bytes',
    help: 'Serialised bytes of the thread-window output of one /query request',
    buckets: [1024, 8192, 65_536, 262_144, 1_048_576, 4_194_304, MAX_RESPONSE_BYTES, 16_777_216],
  });

  constructor(
    private readonly routed: RoutedReader,
    private readonly repo: ThreadWindowRepository,
    private readonly channels: ChannelRepository,
    private readonly metrics: DatabaseMetrics,
    @Inject(RelaySigner) private readonly signer: RelaySigner,
  ) {}

  /** Serves every window of one request; one output list per job, in job order. */
  async serve(reader: BridgeReader, jobs: readonly WindowJob[]): Promise<NostrEvent[][]> {
    try {
      return await this.serveAll(reader, jobs);
    } catch (err) {
      throw new OwnWordingFailure(err, { timedOut: THREAD_TIMEOUT_MESSAGE });
    }
  }

  private async serveAll(reader: BridgeReader, jobs: readonly WindowJob[]): Promise<NostrEvent[][]> {
    const deadline = new RequestDeadline();
    const budget = new ScanBudget();
    const before = await this.authorize(reader, jobs, deadline);
    const out: NostrEvent[][] = [];
    for (const [i, job] of jobs.entries()) {
      const channelId = before[i];
      out.push(channelId === undefined ? [] : await this.window(reader, job, channelId, deadline, budget));
    }
    const after = await this.authorize(reader, jobs, deadline);
    if (after.some((channelId, i) => channelId !== before[i])) throw new HttpError(503, THREAD_AUTH_CHANGED_MESSAGE);
    const bytes = out.flat().reduce((n, ev) => n + Buffer.byteLength(JSON.stringify(ev)) + 1, 0);
    this.responseBytes.observe(bytes);
    if (bytes > MAX_RESPONSE_BYTES) throw new HttpError(503, THREAD_BYTES_MESSAGE);
    return out;
  }

  /**
   * On the writer, uncached: each window's channel (its root's, and among the `#h` values when
   * the filter names any) when the reader may read it now; undefined for nothing to show.
   */
  private authorize(reader: BridgeReader, jobs: readonly WindowJob[], deadline: RequestDeadline): Promise<Array<string | undefined>> {
    const ms = deadline.statementMs();
    return this.routed.internalReadOnWriter('authorization', (db) =>
      bounded(db, ms, async (tx) => {
        const roots = await this.repo.rootChannels(tx, reader.communityId, [...new Set(jobs.map((j) => j.thread.rootId))]);
        const wanted = jobs.map((j) => {
          const channelId = roots.get(j.thread.rootId);
          const named = j.filter.tags.h && channelIdsOf(j.filter.tags.h);
          return channelId !== undefined && (named === undefined || named.includes(channelId)) ? channelId : undefined;
        });
        const candidates = [...new Set(wanted.filter((c): c is string => c !== undefined))];
        const readable = new Set(await this.channels.readableAmong(tx, reader.communityId, reader.pubkey, candidates));
        return wanted.map((c) => (c !== undefined && readable.has(c) ? c : undefined));
      }),
    );
  }

  private async window(reader: BridgeReader, job: WindowJob, channelId: string, deadline: RequestDeadline, budget: ScanBudget): Promise<NostrEvent[]> {
    const q: ThreadWindowQuery = {
      channelId,
      rootId: job.thread.rootId,
      depthLimit: job.thread.depthLimit,
      kinds: job.filter.kinds,
      cursor: job.window.cursor,
      limit: job.thread.limit,
      reader: reader.pubkey,
    };
    const opened = await this.openPage(reader, job.filter, q, deadline, budget);
    try {
      if (opened.page === undefined) return []; // the root left the channel after authorization
      const slice = opened.page.rows.slice(0, q.limit);
      const rows = slice.filter((ev) => eventVisibleToReader(ev, reader.pubkey));
      const out = [...rows];
      if (job.thread.includeAux) {
        // The head window also carries the root's own reactions and edits.
        const targets = [...(q.cursor ? [] : [q.rootId]), ...rows.map((r) => r.id)];
        const scope: ReadScope = { communityId: reader.communityId, channels: [channelId], includeGlobal: true, reader: reader.pubkey };
        out.push(...(await this.auxClosure(opened.run, scope, targets, reader.pubkey, deadline, budget)));
      }
      out.push(this.boundsOverlay(q, slice, opened.page.rows.length > q.limit));
      return out;
    } finally {
      opened.release();
    }
  }

  /** The page on the writer (strong reads), or routed with its snapshot kept for the aux closure. */
  private async openPage(reader: BridgeReader, filter: NostrFilter, q: ThreadWindowQuery, deadline: RequestDeadline, budget: ScanBudget): Promise<OpenedPage> {
    const load = (db: Kysely<DB>) =>
      bounded(db, deadline.statementMs(), async (tx) => ((await this.repo.rootPresent(tx, reader.communityId, q.channelId, q.rootId)) ? this.repo.page(tx, reader.communityId, q) : undefined));
    const charged = (page: ScannedRows | undefined) => {
      if (page) budget.scanned(page.rows.length, page.bytes);
      return page;
    };
    if (filter.extensions.consistency === 'strong') {
      const run: Runner = (work) => this.routed.clientReadOnWriter('authorization', work, { tenant: reader.pubkey });
      return { page: charged(await run(load)), run, release: () => undefined };
    }
    const { page, session } = await this.routed.session(
      {
        path: q.cursor ? 'thread_window_cursor' : 'thread_window_head',
        predicate: fromChannelCursor(q.channelId, q.cursor?.createdAt),
        author: q.cursor ? undefined : { communityId: reader.communityId, pubkey: reader.pubkey },
        span: 'get_thread_window',
        tenant: reader.pubkey,
      },
      load,
      {
        // relay.md §3.6b: a replica lock timeout is answered like a deadline, never re-run on the writer.
        surface: (err) => err instanceof LockTimedOutError,
        // A late-authored root is not covered by the reply cursor: ask the writer.
        redo: (rows) => (rows === undefined ? 'missing_root' : undefined),
      },
    );
    try {
      charged(page);
    } catch (err) {
      session.release(); // a spent budget is surfaced, and the snapshot is not needed any more
      throw err;
    }
    return { page, run: (work) => session.run(work), release: () => session.release() };
  }

  /** First hop: reactions, deletions and edits of the targets; second hop: deletions of those. */
  private async auxClosure(run: Runner, scope: ReadScope, targets: string[], reader: string, deadline: RequestDeadline, budget: ScanBudget): Promise<NostrEvent[]> {
    const first = await this.referencing(run, scope, targets, AUX_KINDS, deadline, budget);
    const second = await this.referencing(run, scope, first.map((e) => e.id), AUX_SECOND_HOP_KINDS, deadline, budget);
    const seen = new Set(targets);
    return [...first, ...second].filter((e) => eventVisibleToReader(e, reader) && !seen.has(e.id) && seen.add(e.id));
  }

  /** Targets in batches of 200, each drained in pages of 1000 along the (created_at, id) keyset. */
  private async referencing(run: Runner, scope: ReadScope, targets: string[], kinds: number[], deadline: RequestDeadline, budget: ScanBudget): Promise<NostrEvent[]> {
    const out: NostrEvent[] = [];
    for (let i = 0; i < targets.length; i += AUX_TARGET_BATCH) {
      const batch = targets.slice(i, i + AUX_TARGET_BATCH);
      let after: WindowCursor | undefined;
      for (;;) {
        budget.auxQuery();
        // Taken outside the session: a spent deadline must not read as a replica failure and degrade it.
        const ms = deadline.statementMs();
        const page = await run((db) => datastoreSpan(this.metrics, 'thread_window_aux', () => bounded(db, ms, (tx) => this.repo.auxPage(tx, scope, batch, kinds, after, AUX_PAGE))));
        budget.scanned(page.rows.length, page.bytes);
        const rows = page.rows.slice(0, AUX_PAGE);
        out.push(...rows);
        if (page.rows.length <= AUX_PAGE) break;
        const last = rows[rows.length - 1];
        after = { createdAt: last.created_at, id: last.id };
      }
    }
    return out;
  }

  /** The relay-signed bounds of one window. */
  private boundsOverlay(q: ThreadWindowQuery, slice: readonly NostrEvent[], hasMore: boolean): NostrEvent {
    return windowBoundsOverlay(this.signer, {
      anchor: q.rootId,
      position: q.cursor && `${q.cursor.createdAt}:${q.cursor.id}`,
      channelId: q.channelId,
      rootId: q.rootId,
      hasMore,
      last: slice[slice.length - 1],
      content: (bounds) => ({ version: 1, direction: 'older', ...bounds }),
    });
  }


}

/**
 * One statement scope of the window (database.md §2.8): transaction-local `statement_timeout` of
 * `ms` (min(4 s, time left)) and `lock_timeout` 1 s, rolled back afterwards (a savepoint inside
 * the replica's snapshot, a transaction of its own on the writer).
 */
function bounded<T>(db: Kysely<DB>, ms: number, fn: (tx: Kysely<DB>) => Promise<T>): Promise<T> {
  return withStatementDeadline(db, ms, async (tx) => {
    await sql`select set_config('lock_timeout', ${String(THREAD_WINDOW_LOCK_TIMEOUT_MS)}, true)`.execute(tx);
    return fn(tx);
  });
}
