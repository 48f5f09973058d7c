/**
 * One raw `ws` client connection for the benches, NIP-42 authenticated, with the two load shapes
 * they need: pipelined EVENT publishing with a bounded window of un-acknowledged events, and
 * sequential REQ -> EOSE round trips. Frames are matched by event id / subscription id; the
 * clock for each latency starts just before the frame is handed to the socket.
 */
import { finalizeEvent, type Event as NostrEvent } from 'nostr-tools/pure';
import WebSocket from 'ws';

/** An event and its pre-serialised `["EVENT", …]` frame (serialise before timing). */
export interface PublishItem {
  readonly id: string;
  readonly frame: string;
}

export function toPublishItems(events: readonly NostrEvent[]): PublishItem[] {
  return events.map((ev) => ({ id: ev.id, frame: JSON.stringify(['EVENT', ev]) }));
}

export interface PublishResult {
  accepted: number;
  duplicates: number;
  rejected: number;
  /** OK reason -> count, for the rejected ones. */
  reasons: Map<string, number>;
  latenciesMs: number[];
}

export interface ReqResult {
  ids: string[];
  end: 'EOSE' | 'CLOSED';
  reason: string | undefined;
  ms: number;
  /** When the REQ went out, in ms on the performance.now() clock (for time series of a run). */
  sentAtMs: number;
}

type OkWaiter = (ok: boolean, message: string) => void;

interface ReqWaiter {
  subId: string;
  ids: string[];
  done(end: 'EOSE' | 'CLOSED', reason: string | undefined): void;
  fail(err: Error): void;
}

const OPEN_TIMEOUT_MS = 10_000;
/** How the relay starts a history frame: `["EVENT","<sub id>",{"id":"<64 hex>",…` (sub ids here need no escaping). */
const EVENT_HEAD = '["EVENT","';
const ID_HEAD = ',{"id":"';

export class BenchConnection {
  private readonly okWaiters = new Map<string, OkWaiter>();
  /** Pending REQs by subscription id (several may be in flight: the open-loop runs). */
  private readonly reqWaiters = new Map<string, ReqWaiter>();
  private challenge: string | undefined;
  private failure: ((err: Error) => void) | undefined;
  private closedError: Error | undefined;
  /** Live EVENT frames (not part of a pending REQ's history), e.g. for fan-out latency. */
  onLiveEvent: ((subId: string, event: NostrEvent) => void) | undefined;
  /** Called just before publishWindowed hands an event's frame to the socket. */
  onPublish: ((eventId: string) => void) | undefined;

  private constructor(private readonly ws: WebSocket) {
    ws.on('message', (data) => this.onMessage(data.toString()));
    ws.on('close', (code) => this.fail(new Error(`socket closed by the relay (code ${code})`)));
    ws.on('error', (err) => this.fail(err));
  }

  /** Connects to `relayUrl` (also the NIP-42 `relay` tag) and authenticates with `sk`. */
  static async open(relayUrl: string, sk: Uint8Array): Promise<BenchConnection> {
    const ws = new WebSocket(relayUrl, { perMessageDeflate: false, maxPayload: 64 * 1024 * 1024 });
    const conn = new BenchConnection(ws);
    await conn.until(() => conn.challenge !== undefined, 'no AUTH challenge from the relay');
    const auth = finalizeEvent(
      { kind: 22242, created_at: Math.floor(Date.now() / 1000), tags: [['relay', relayUrl], ['challenge', conn.challenge!]], content: '' },
      sk,
    );
    const [ok, message] = await new Promise<[boolean, string]>((resolve, reject) => {
      conn.failure = reject;
      conn.okWaiters.set(auth.id, (accepted, msg) => resolve([accepted, msg]));
      ws.send(JSON.stringify(['AUTH', auth]));
    });
    if (!ok) throw new Error(`AUTH refused: ${message}`);
    return conn;
  }

  /** Connects to a relay that sends no NIP-42 challenge (nostream), without authenticating. */
  static async openUnauthenticated(relayUrl: string): Promise<BenchConnection> {
    const ws = new WebSocket(relayUrl, { perMessageDeflate: false, maxPayload: 64 * 1024 * 1024 });
    const conn = new BenchConnection(ws);
    await conn.until(() => ws.readyState === WebSocket.OPEN, 'the relay did not accept the connection');
    return conn;
  }

  /** Sends every item, keeping at most `window` without an OK; resolves when all are answered. */
  publishWindowed(items: readonly PublishItem[], window: number): Promise<PublishResult> {
    const result: PublishResult = { accepted: 0, duplicates: 0, rejected: 0, reasons: new Map(), latenciesMs: [] };
    let next = 0;
    let answered = 0;
    return new Promise((resolve, reject) => {
      this.failure = reject;
      const sendNext = (): void => {
        const item = items[next++];
        const sentAt = process.hrtime.bigint();
        this.okWaiters.set(item.id, (ok, message) => {
          result.latenciesMs.push(Number(process.hrtime.bigint() - sentAt) / 1e6);
          countOutcome(result, ok, message);
          answered += 1;
          if (next < items.length) sendNext();
          else if (answered === items.length) resolve(result);
        });
        this.onPublish?.(item.id);
        this.ws.send(item.frame);
      };
      if (items.length === 0) resolve(result);
      for (let i = 0; i < Math.min(window, items.length); i++) sendNext();
    });
  }

  /**
   * One REQ, resolved at its EOSE (or CLOSED) with the ids of the events that came before it.
   * REQs with different subscription ids may be in flight together.
   */
  req(subId: string, ...filters: object[]): Promise<ReqResult> {
    return new Promise((resolve, reject) => {
      if (this.closedError) return reject(this.closedError);
      const ids: string[] = [];
      const sentAtMs = performance.now();
      const sentAt = process.hrtime.bigint();
      this.reqWaiters.set(subId, {
        subId,
        ids,
        done: (end, reason) => resolve({ ids, end, reason, ms: Number(process.hrtime.bigint() - sentAt) / 1e6, sentAtMs }),
        fail: reject,
      });
      this.ws.send(JSON.stringify(['REQ', subId, ...filters]));
    });
  }

  /** Ends a subscription (a REQ with `limit` stays live after its EOSE until closed). */
  closeSubscription(subId: string): void {
    this.reqWaiters.delete(subId);
    this.ws.send(JSON.stringify(['CLOSE', subId]));
  }

  /** True until the socket failed or was closed. */
  get open(): boolean {
    return this.closedError === undefined;
  }

  close(): void {
    this.failure = undefined;
    this.closedError = new Error('closed by the bench');
    this.ws.close();
  }

  /**
   * The load generator shares the machine with the relay and Postgres, so it does not parse the
   * history it only counts: an EVENT frame for the pending REQ gives up its id by position (the
   * relay writes `["EVENT","<sub>",{"id":"<64 hex>",…`). Any other frame, or one not laid out
   * that way, is parsed in full.
   */
  private onMessage(text: string): void {
    if (this.reqWaiters.size > 0 && text.startsWith(EVENT_HEAD)) {
      const subEnd = text.indexOf('"', EVENT_HEAD.length);
      const req = subEnd > 0 ? this.reqWaiters.get(text.slice(EVENT_HEAD.length, subEnd)) : undefined;
      const idAt = subEnd + ID_HEAD.length + 1;
      if (req !== undefined && text.startsWith(ID_HEAD, subEnd + 1) && text.charCodeAt(idAt + 64) === 34 /* " */) {
        req.ids.push(text.slice(idAt, idAt + 64));
        return;
      }
    }
    this.onFrame(JSON.parse(text) as unknown[]);
  }

  private onFrame(frame: unknown[]): void {
    const [type, a, b, c] = frame;
    const req = typeof a === 'string' ? this.reqWaiters.get(a) : undefined;
    if (type === 'OK') {
      const waiter = this.okWaiters.get(a as string);
      this.okWaiters.delete(a as string);
      waiter?.(b === true, String(c ?? ''));
    } else if (type === 'EVENT' && req) {
      req.ids.push((b as { id: string }).id);
    } else if (type === 'EVENT') {
      this.onLiveEvent?.(a as string, b as NostrEvent);
    } else if ((type === 'EOSE' || type === 'CLOSED') && req) {
      this.reqWaiters.delete(req.subId);
      req.done(type, type === 'CLOSED' ? String(b ?? '') : undefined);
    } else if (type === 'AUTH' && typeof a === 'string') {
      this.challenge = a;
    }
  }

  private fail(err: Error): void {
    if (this.closedError) return;
    this.closedError = err;
    this.failure?.(err);
    for (const waiter of this.reqWaiters.values()) waiter.fail(err);
    this.reqWaiters.clear();
  }

  private async until(condition: () => boolean, what: string): Promise<void> {
    const deadline = Date.now() + OPEN_TIMEOUT_MS;
    while (!condition()) {
      if (this.closedError) throw this.closedError;
      if (Date.now() > deadline) throw new Error(what);
      await new Promise((r) => setTimeout(r, 5));
    }
  }
}

function countOutcome(result: PublishResult, ok: boolean, message: string): void {
  if (ok && message.startsWith('duplicate:')) result.duplicates += 1;
  else if (ok) result.accepted += 1;
  else {
    result.rejected += 1;
    result.reasons.set(message, (result.reasons.get(message) ?? 0) + 1);
  }
}

/** Sums the per-connection results of one publishing phase. */
export function mergePublishResults(results: readonly PublishResult[]): PublishResult {
  const merged: PublishResult = { accepted: 0, duplicates: 0, rejected: 0, reasons: new Map(), latenciesMs: [] };
  for (const r of results) {
    merged.accepted += r.accepted;
    merged.duplicates += r.duplicates;
    merged.rejected += r.rejected;
    for (const [reason, n] of r.reasons) merged.reasons.set(reason, (merged.reasons.get(reason) ?? 0) + n);
    for (const ms of r.latenciesMs) merged.latenciesMs.push(ms);
  }
  return merged;
}
