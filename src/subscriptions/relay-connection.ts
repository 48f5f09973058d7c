/**
 * One WebSocket client: its tenant binding, auth state, subscriptions and a
 * bounded, non-blocking outbound path. Sends never wait; a client that keeps its
 * buffer full past the grace limit is disconnected instead of growing memory.
 */
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { WebSocket } from 'ws';
import { NostrFilter } from '../common/nostr.types.js';
import { ReadScope } from '../events/read-scope.js';

export interface LiveSubscription {
  readonly token: number;
  readonly filters: readonly NostrFilter[];
  /** What the subscription was authorised to see when it was claimed. */
  readonly scope: ReadScope;
  /** false for a one-shot search: it holds the id but never receives fan-out. */
  readonly live: boolean;
}

export interface ConnectionLimits {
  readonly sendBuffer: number;
  readonly slowClientGraceLimit: number;
  /** Outbound bytes held by the socket beyond which a send counts as "full". */
  readonly maxBufferedBytes: number;
}

let nextConnectionId = 1;
let nextSubscriptionToken = 1;

export type SendResult = 'sent' | 'full' | 'closed';

export class RelayConnection {
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
  /** REQs read but not yet claimed: sub id → the frame's sequence number (latest wins). */
  private readonly pendingReqs = new Map<string, number>();
  private frameSeq = 0;
  private inflightSends = 0;
  private consecutiveFull = 0;
  private cancelled = false;
  private corked = false;
  private readonly gone = new AbortController();

  constructor(
    readonly ws: WebSocket,
    readonly communityId: string,
    readonly host: string,
    readonly log: Logger,
    private readonly limits: ConnectionLimits,
    private readonly onSlowClient: (conn: RelayConnection) => void,
  ) {}

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

  sendRaw(text: string): SendResult {
    if (this.isCancelled) return 'closed';
    if (this.inflightSends >= this.limits.sendBuffer || this.ws.bufferedAmount > this.limits.maxBufferedBytes) {
      this.consecutiveFull += 1;
      if (this.consecutiveFull >= this.limits.slowClientGraceLimit) this.onSlowClient(this);
      return 'full';
    }
    this.consecutiveFull = 0;
    this.inflightSends += 1;
    this.corkUntilNextTick();
    this.ws.send(text, () => {
      this.inflightSends -= 1;
    });
    return 'sent';
  }

  /**
   * Frames sent in one turn (a history page, a burst of OKs) leave in one write instead of one
   * syscall each: the socket is corked at the first send and uncorked once the turn's
   * callbacks have run. Without a raw socket (tests with a stand-in) frames go out one by one.
   */
  private corkUntilNextTick(): void {
    if (this.corked) return;
    const socket = (this.ws as unknown as { _socket?: { cork?: () => void; uncork: () => void } })._socket;
    if (typeof socket?.cork !== 'function') return;
    this.corked = true;
    socket.cork();
    process.nextTick(() => {
      this.corked = false;
      socket.uncork();
    });
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

  /** Retires whatever holds the id and voids any REQ for it still in its checks. */
  retire(subId: string): void {
    this.pendingReqs.delete(subId);
    this.subscriptions.delete(subId);
  }

  /**
   * Mints a new owner token for a sub id, replacing any holder (a same-id REQ
   * replaces). A REQ superseded while in its checks (by a later REQ or a CLOSE
   * for the id), or arriving after teardown, is refused: undefined.
   */
  claim(subId: string, filters: readonly NostrFilter[], scope: ReadScope, live = true, reqSeq?: number): number | undefined {
    if (this.isCancelled) return undefined;
    if (reqSeq !== undefined) {
      if (this.pendingReqs.get(subId) !== reqSeq) return undefined;
      this.pendingReqs.delete(subId);
    }
    const token = nextSubscriptionToken++;
    this.subscriptions.set(subId, { token, filters, scope, live });
    return token;
  }

  owns(subId: string, token: number): boolean {
    return this.subscriptions.get(subId)?.token === token;
  }

  /** Removes the sub if `token` still owns it; true when it did. */
  retireIfOwner(subId: string, token: number): boolean {
    if (!this.owns(subId, token)) return false;
    this.subscriptions.delete(subId);
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
    this.subscriptions.clear();
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
