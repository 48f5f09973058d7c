/**
 * The relay-signed overlays of threads and windows, built once: the thread summary (kind 39005,
 * live and in the bridge's channel window) and the bounds of a window (kind 39006, for a channel
 * window and a thread window). Fan-out or response only; never stored.
 */
import type { RelaySigner } from '../common/relay-signer.js';
import type { NostrEvent } from '../nostr/nostr.types.js';
import { KIND } from '../nostr/kinds.js';
import type { ThreadSummary } from './thread-summaries.js';

export function threadSummaryOverlay(signer: RelaySigner, s: ThreadSummary, channelId: string): NostrEvent {
  return signer.sign({
    kind: KIND.THREAD_SUMMARY,
    tags: [
      ['e', s.rootId],
      ['d', s.rootId],
      ['h', channelId],
    ],
    content: JSON.stringify({ reply_count: s.replyCount, descendant_count: s.descendantCount, last_reply_at: s.lastReplyAt, participants: s.participants }),
  });
}

/** Where a window ends: `next_cursor` is null exactly when `has_more` is false. */
export interface WindowBounds {
  readonly has_more: boolean;
  readonly next_cursor: { readonly created_at: number; readonly id: string } | null;
}

export interface WindowOverlay {
  /** What the window is of: its channel, or its thread's root. */
  readonly anchor: string;
  /** The cursor the window was read from (`<created_at>:<id>`), undefined for the head. */
  readonly position: string | undefined;
  readonly channelId: string;
  /** A thread window's root (its `e` tag). */
  readonly rootId?: string;
  readonly hasMore: boolean;
  /** The window's last row: the next page starts after it. */
  readonly last: { readonly created_at: number; readonly id: string } | undefined;
  /** The content around the bounds (each window kind has its own fields). */
  readonly content: (bounds: WindowBounds) => Record<string, unknown>;
}

export function windowBoundsOverlay(signer: RelaySigner, w: WindowOverlay): NostrEvent {
  const next = w.hasMore && w.last ? { created_at: w.last.created_at, id: w.last.id } : null;
  return signer.sign({
    kind: KIND.WINDOW_BOUNDS,
    tags: [['d', `${w.anchor}:${w.position ?? 'head'}`], ...(w.rootId === undefined ? [] : [['e', w.rootId]]), ['h', w.channelId]],
    content: JSON.stringify(w.content({ has_more: next !== null, next_cursor: next })),
  });
}
