/**
 * One WebSocket client: its tenant binding, auth state, subscriptions and a
 * bounded, non-blocking outbound path (ConnectionOutput). Sends never wait. Output queued for
 * the client is counted in bytes against its own budget and the process-wide one
 * (OutputBudget); a send that does not fit is "full", the subscription it was for
 * ends with `CLOSED "error: slow consumer: output buffer full"`, and a client that
 * stays full past the grace limit is disconnected instead of growing memory.
 */
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { WebSocket } from 'ws';
import { NostrFilter } from '../nostr/nostr.types.js';
import { ReadScope } from '../channels/read-scope.js';
import type { AuthHoldLimits } from '../config/app-config.js';
import { AuthHold } from './auth-hold.js';
import { HistoryOverlap } from './history-overlap.js';
import { OutputBudget, OutputHolder } from './output-budget.js';
import { ConnectionOutput, SendResult, SLOW_CONSUMER_CLOSE_CODE, SLOW_CONSUMER_CLOSE_REASON } from './connection-output.js';
import type { MemoryPool, MemoryRefusal } from '../memory/memory-budget.js';
import type { Refusal } from '../nostr/refusal.js';
import { closedFrame } from './ws-reasons.js';
import { WS_REFUSALS } from './ws.refusals.js';

/**
 * What a subscription's filters take on the heap while it is open, estimated from their JSON:
 * parsed, each short value is a string with its own header plus a slot in its array (measured
 * here: 1.4x the text for three filters of 2,000 hex values each), and the matcher's lookup sets,
 * built at the first live match, add more.
 */
export function filterHeapBytes(filters: readonly NostrFilter[]): number {
  return 2 * JSON.stringify(filters).length + 256;
}

export interface LiveSubscription {
  readonly token: number;
  readonly filters: readonly NostrFilter[];
  /** What the subscription was authorised to see when it was claimed. */
  readonly scope: ReadScope;
  /** false for a one-shot search: it holds the id but never receives fan-out. */
  readonly live: boolean;
  /** Keeps an event stored during the history read from arriving both live and in the page. */
  readonly overlap?: HistoryOverlap;
  /** Bytes of the `filters` memory pool the subscription holds (given back when it ends). */
  readonly filterBytes: number;
}

export interface ConnectionLimits {
  readonly sendBuffer: number;
  readonly slowClientGraceLimit: number;
  /** Output bytes queued for this client beyond which a send counts as "full". */
  readonly maxQueuedBytes: number;
  /** Bounds on the frames held until AUTH succeeds; absent = nothing is held. */
  readonly authHold?: AuthHoldLimits;
  /** The process memory pools the connection draws from (src/memory); absent = unbounded (unit tests). */
  readonly pools?: { readonly authHold?: MemoryPool; readonly filters?: MemoryPool };
}

/** What the owner of the connections hears about output that did not fit. */
export interface OutputEvents {
  /** The client is being disconnected for its output (grace exhausted, or cut off by the process budget). */
  slowClientDisconnected(conn: RelayConnection): void;
  /** A subscription was ended (WS_REFUSALS.slowConsumer) because its output did not fit. */
  subscriptionShed(conn: RelayConnection): void;
}

let nextConnectionId = 1;
let nextSubscriptionToken = 1;

export class RelayConnection implements OutputHolder {
  readonly id = nextConnectionId++;
  readonly challenge = randomBytes(16).toString('hex');
  readonly subscriptions = new Map<string, LiveSubscription>();
  pubkey: string | undefined;
  /** The NIP-OA owner the AUTH proved, if any: the session is an agent's (quota tier, relay.md §2.4). */
  nipOaOwner: string | undefined;
  authState: 'pending' | 'authenticated' | 'failed' = 'pending';
  missedPongs = 0;
  /** Live deliveries run in order per connection (each may wait on an access check). */
  fanoutChain: Promise<void> = Promise.resolve();
  /** The AUTH being verified, if any; EVENT/REQ/COUNT wait for it. */
  pendingAuth: Promise<void> | undefined;
  /** AUTH frames received and not yet answered: while one is, the client-side AUTH deadline waits for the relay. */
  authFramesInFlight = 0;
  /** EVENT/REQ/COUNT/CLOSE frames read while AUTH had no outcome yet, in order. */
  readonly authHold: AuthHold;
  /** REQs read but not yet claimed: sub id → the frame's sequence number (latest wins). */
  private readonly pendingReqs = new Map<string, number>();
  private frameSeq = 0;
  private cancelled = false;
  private readonly gone = new AbortController();
  /** The outbound queue: its accounting, corking and the slow-client grace. */
  private readonly out: ConnectionOutput;

  constructor(
    readonly ws: WebSocket,
    readonly communityId: string,
    readonly host: string,
    readonly log: Logger,
    private readonly limits: ConnectionLimits,
    private readonly output: OutputEvents,
    private readonly budget: OutputBudget = new OutputBudget(Number.POSITIVE_INFINITY),
  ) {
    this.authHold = new AuthHold(limits.authHold ?? { maxFrames: 0, maxBytes: 0, graceMs: 0 }, limits.pools?.authHold);
    this.out = new ConnectionOutput(ws, limits, budget, this);
    budget.track(this);
  }

  /** Bytes handed to the socket whose write has not reached the kernel yet. */
  get queuedBytes(): number {
    return this.out.queuedBytes;
  }

  /** Aborted once the connection is cancelled or closed: the database reads it started are cancelled. */
  get readSignal(): AbortSignal {
    return this.gone.signal;
  }

  get isCancelled(): boolean {
    return this.cancelled || this.ws.readyState !== WebSocket.OPEN;
  }

  /** Serialises and queues one frame without waiting. */
  send(frame: readonly unknown[]): SendResult {
    return this.sendRaw(JSON.stringify(frame));
  }

  /** Queues one encoded frame (a Buffer is sent as a text frame: it must hold UTF-8 JSON). */
  sendRaw(frame: string | Buffer): SendResult {
    return this.out.enqueue(frame, false);
  }

  /**
   * Queues a subscription's terminal CLOSED. It may use TERMINAL_RESERVE_BYTES past the
   * budgets; a client with no room even for that is disconnected ('full' is returned).
   */
  sendClosed(subId: string, refusal?: Refusal): SendResult {
    const result = this.out.enqueue(JSON.stringify(closedFrame(subId, refusal)), true);
    if (result === 'full') this.disconnectSlow();
    return result;
  }

  /** True when a data frame of `bytes` fits the connection's budget (no side effects). */
  roomFor(bytes: number): boolean {
    return this.out.roomFor(bytes);
  }

  /** Queues a subscription's EOSE; like CLOSED it may use the terminal reserve. */
  sendEose(subId: string): SendResult {
    return this.out.enqueue(JSON.stringify(['EOSE', subId]), true);
  }

  /**
   * True unless the client is congested (a send did not fit and its queue has not drained to
   * half the budget since); checked before work whose output would be dropped. A miss counts
   * toward the slow-client grace like a full send. Making room may cut off other clients (the
   * process budget) or this one.
   */
  hasOutputRoom(): boolean {
    return this.out.hasRoom();
  }

  /**
   * True while the client has not taken half its output budget yet: history reads do not read
   * ahead for it meanwhile (EventQueryService.history), so rows wait in Postgres, not in memory.
   */
  outputBacklogged(): boolean {
    return this.out.backlogged();
  }

  /** See ConnectionOutput.waitForRoom. */
  waitForRoom(bytes: number): Promise<boolean> {
    return this.out.waitForRoom(bytes);
  }

  /**
   * Ends a subscription whose output did not fit: retired (if `token` still owns it),
   * then `CLOSED` with WS_REFUSALS.slowConsumer. Without a token, whatever holds the id is retired.
   */
  shedSubscription(subId: string, token?: number): void {
    if (token === undefined) this.retire(subId);
    else if (!this.retireIfOwner(subId, token)) return;
    if (this.isCancelled) return;
    this.output.subscriptionShed(this);
    this.sendClosed(subId, WS_REFUSALS.slowConsumer);
  }

  /**
   * Disconnects a client for its output: a close frame (1008), then the socket is
   * dropped at once and its queued bytes released. The close frame reaches only a
   * client whose socket still had room; one that stopped reading sees a reset.
   */
  disconnectSlow(): void {
    if (!this.cancelled) this.output.slowClientDisconnected(this);
    this.out.flush();
    this.cancel(SLOW_CONSUMER_CLOSE_CODE, SLOW_CONSUMER_CLOSE_REASON);
    this.ws.terminate();
    this.releaseOutput();
  }

  /** Gives the connection's queued bytes back to the process budget (socket gone). */
  releaseOutput(): void {
    if (this.out.release()) this.budget.untrack(this);
  }

  /** Hands what this turn queued to the socket now, in one write, instead of on the next tick. */
  flush(): void {
    this.out.flush();
  }

  /**
   * Called synchronously when a REQ frame is read, before its checks (which may
   * wait on the database) run. Frame order decides: a later REQ or a CLOSE for
   * the same id supersedes this one even if its checks finish first.
   */
  noteReq(subId: string): number {
    const seq = ++this.frameSeq;
    this.pendingReqs.set(subId, seq);
    return seq;
  }

  /**
   * Takes the memory a subscription with these filters holds while it is open from the key's
   * share of the `filters` pool: the bytes to pass to claim(), or why they do not fit.
   */
  reserveFilters(filters: readonly NostrFilter[]): number | MemoryRefusal {
    const bytes = filterHeapBytes(filters);
    return this.limits.pools?.filters?.take(bytes, this.pubkey) ?? bytes;
  }

  /** Gives back bytes reserved for a subscription that was never claimed. */
  releaseFilters(bytes: number): void {
    this.limits.pools?.filters?.release(bytes, this.pubkey);
  }

  /** Retires whatever holds the id and voids any REQ for it still in its checks. */
  retire(subId: string): void {
    this.pendingReqs.delete(subId);
    this.drop(subId);
  }

  /** Removes the subscription holding `subId`, giving back its filters' memory. */
  private drop(subId: string): void {
    const sub = this.subscriptions.get(subId);
    if (sub === undefined) return;
    this.subscriptions.delete(subId);
    this.releaseFilters(sub.filterBytes);
  }

  /**
   * Mints a new owner token for a sub id, replacing any holder (a same-id REQ
   * replaces). A REQ superseded while in its checks (by a later REQ or a CLOSE
   * for the id), or arriving after teardown, is refused: undefined.
   */
  claim(subId: string, filters: readonly NostrFilter[], scope: ReadScope, live = true, reqSeq?: number, filterBytes = 0): number | undefined {
    if (this.isCancelled || (reqSeq !== undefined && this.pendingReqs.get(subId) !== reqSeq)) {
      this.releaseFilters(filterBytes);
      return undefined;
    }
    if (reqSeq !== undefined) this.pendingReqs.delete(subId);
    const token = nextSubscriptionToken++;
    this.drop(subId);
    this.subscriptions.set(subId, { token, filters, scope, live, overlap: live ? new HistoryOverlap() : undefined, filterBytes });
    return token;
  }

  owns(subId: string, token: number): boolean {
    return this.subscriptions.get(subId)?.token === token;
  }

  /** Removes the sub if `token` still owns it; true when it did. */
  retireIfOwner(subId: string, token: number): boolean {
    if (!this.owns(subId, token)) return false;
    this.drop(subId);
    return true;
  }

  /** Drops a REQ's pending mark when it is refused before claiming. */
  abandonReq(subId: string, reqSeq: number): void {
    if (this.pendingReqs.get(subId) === reqSeq) this.pendingReqs.delete(subId);
  }

  cancel(code?: number, reason?: string): void {
    if (this.cancelled) return;
    this.cancelled = true;
    this.gone.abort();
    for (const subId of [...this.subscriptions.keys()]) this.drop(subId);
    this.pendingReqs.clear();
    try {
      if (code) this.ws.close(code, reason);
      else this.ws.close();
    } catch {
      this.ws.terminate();
    }
    // A client that never completes the close handshake must not hold the socket.
    setTimeout(() => this.ws.terminate(), 5000).unref();
  }
}
