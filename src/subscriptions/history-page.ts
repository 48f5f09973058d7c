/**
 * One turn of a REQ's history page (ReqHandler streams a page in OutputTurns turns): encodes and
 * sends rows until the batch ends, FRAMES_PER_TURN were sent or one does not fit, then flushes the
 * socket, so the write is part of the turn.
 *
 * Frames are bytes shared between subscribers: the rows of a shared history read (HistoryFlights)
 * are the same objects for every joiner, and each row keeps the last EVENT frame built from it. A
 * joiner whose subscription id is the same as the previous one's (a thousand reconnecting clients
 * of one app) sends those very bytes; another id builds its own frame around the row's JSON,
 * which StoredEvent builds once.
 */
import { NostrEvent } from '../nostr/nostr.types.js';
import { eventJson } from '../events/stored-event.js';
import { eventVisibleToReader } from '../events/visibility.js';
import { HistoryOverlap } from './history-overlap.js';
import type { SendResult } from './connection-output.js';
import { RelayConnection } from './relay-connection.js';

/** Frames one turn of a history page may send (a bigger page takes several turns). */
export const FRAMES_PER_TURN = 100;

/** Where one turn stopped: `next` is the first row not sent. */
export interface PageStep {
  readonly next: number;
  /** `gone`: the subscription was replaced or closed, or the socket is; `full`: a send did not fit. */
  readonly stop?: 'gone' | 'full';
  /** The frame at `next` does not fit the connection's budget yet: wait for room, then go on. */
  readonly waitBytes?: number;
  /** The page's last row went out in this turn and EOSE after it. */
  readonly eose?: true;
}

/** The subscription a page is for: its id's frame prefix and its owner token. */
export interface PageTarget {
  readonly conn: RelayConnection;
  readonly subId: string;
  readonly token: number;
  readonly prefix: string;
  /** The subscription's record of what live delivery already sent (absent: nothing is live). */
  readonly overlap: HistoryOverlap | undefined;
}

export function pageTarget(conn: RelayConnection, subId: string, token: number): PageTarget {
  const sub = conn.subscriptions.get(subId);
  return { conn, subId, token, prefix: `["EVENT",${JSON.stringify(subId)},`, overlap: sub?.token === token ? sub.overlap : undefined };
}

/** EOSE for the page's subscription; from then on live delivery alone sends new events. */
export function sendPageEose(t: PageTarget): SendResult {
  t.overlap?.end();
  return t.conn.sendEose(t.subId);
}

/** Sends rows of `batch` from `from`; with `last`, EOSE follows the batch's last row in the same turn. */
export function sendPageTurn(t: PageTarget, batch: readonly NostrEvent[], from: number, last: boolean): PageStep {
  const { conn, subId, token } = t;
  let sent = 0;
  try {
    for (let i = from; i < batch.length; i++) {
      if (sent === FRAMES_PER_TURN) return { next: i };
      const ev = batch[i];
      if (!eventVisibleToReader(ev, conn.pubkey!)) continue;
      if (t.overlap?.pageMay(ev.id) === false) continue; // already sent live
      if (!conn.owns(subId, token)) return { next: i, stop: 'gone' };
      const frame = eventFrame(ev, t.prefix);
      if (!conn.roomFor(frame.length)) return { next: i, waitBytes: frame.length };
      const result = conn.sendRaw(frame);
      if (result === 'full') return { next: i, stop: 'full' };
      if (result === 'closed') return { next: i, stop: 'gone' };
      t.overlap?.pageSent(ev.id);
      sent += 1;
    }
    if (!last) return { next: batch.length };
    if (!conn.owns(subId, token)) return { next: batch.length, stop: 'gone' };
    return sendPageEose(t) === 'full' ? { next: batch.length, stop: 'full' } : { next: batch.length, eose: true };
  } finally {
    conn.flush();
  }
}

const lastFrame = new WeakMap<NostrEvent, { prefix: string; bytes: Buffer }>();

/** `prefix + event JSON + ']'` as UTF-8, reused while consecutive subscribers share the prefix. */
export function eventFrame(ev: NostrEvent, prefix: string): Buffer {
  const kept = lastFrame.get(ev);
  if (kept?.prefix === prefix) return kept.bytes;
  const bytes = Buffer.from(prefix + eventJson(ev) + ']');
  lastFrame.set(ev, { prefix, bytes });
  return bytes;
}
