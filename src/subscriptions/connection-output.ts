/**
 * A connection's outbound queue (RelayConnection's half that never waits): frames handed to the
 * socket are counted in bytes against the connection's own budget and the process-wide one
 * (OutputBudget), corked per event-loop turn so a turn's frames leave in one write, and a client
 * whose sends keep not fitting is handed to its connection to be disconnected (the slow-client
 * grace).
 */
import { WebSocket } from 'ws';
import type { OutputBudget, OutputHolder } from './output-budget.js';

/** Close code and reason of a client disconnected for its output. */
export const SLOW_CONSUMER_CLOSE_CODE = 1008;
export const SLOW_CONSUMER_CLOSE_REASON = 'slow consumer: output buffer full';
/**
 * Bytes past the per-connection budget that terminal frames (CLOSED) may use, so a
 * client over budget still learns why its subscriptions ended. A client with no room
 * even for that is disconnected.
 */
export const TERMINAL_RESERVE_BYTES = 16 * 1024;
/** A full connection whose queued output does not shrink for this long is not reading. */
export const SLOW_CONSUMER_STALL_MS = 250;
const DRAIN_POLL_MS = 10;

/** Buffers are sent as text frames too (every frame is NIP-01 JSON); ws never modifies them (no masking, no compression). */
const TEXT_FRAME = { binary: false } as const;

export type SendResult = 'sent' | 'full' | 'closed';

/** The per-connection limits the queue applies (ConnectionLimits' output half). */
export interface OutputLimits {
  readonly sendBuffer: number;
  readonly slowClientGraceLimit: number;
  readonly maxQueuedBytes: number;
}

export class ConnectionOutput {
  private inflightSends = 0;
  private queued = 0;
  private released = false;
  private consecutiveFull = 0;
  /** Set by a send that did not fit; cleared once the queue drains to half the budget. */
  private congested = false;
  private corked = false;

  /** `holder` is the connection: the process budget's unit, disconnected when its grace runs out. */
  constructor(
    private readonly ws: WebSocket,
    private readonly limits: OutputLimits,
    private readonly budget: OutputBudget,
    private readonly holder: OutputHolder,
  ) {}

  /** Bytes handed to the socket whose write has not reached the kernel yet. */
  get queuedBytes(): number {
    return this.queued;
  }

  /** True when a data frame of `bytes` fits the connection's budget (no side effects). */
  roomFor(bytes: number): boolean {
    return this.inflightSends < this.limits.sendBuffer && (this.queued === 0 || this.queued + bytes <= this.limits.maxQueuedBytes);
  }

  /**
   * True while more than half the connection's output budget waits for the socket: frames read
   * now would only queue behind it. No side effects (RelayConnection.outputBacklogged).
   */
  backlogged(): boolean {
    return this.congested || this.queued > this.limits.maxQueuedBytes / 2;
  }

  /** RelayConnection.hasOutputRoom. */
  hasRoom(): boolean {
    if (this.holder.isCancelled) return false;
    if (!this.congested && this.budget.makeRoom(this.holder, 1)) return true;
    this.noteFull();
    return false;
  }

  /**
   * Waits while the output is full and the client is draining it: a client that reads,
   * however slowly, frees some bytes within SLOW_CONSUMER_STALL_MS; one that does not is
   * a slow consumer. False (counted like a full send) when it stalled or went away.
   */
  async waitForRoom(bytes: number): Promise<boolean> {
    let last = this.queued;
    let stallSince = Date.now();
    while (!this.roomFor(bytes) && !this.holder.isCancelled) {
      await new Promise((r) => setTimeout(r, DRAIN_POLL_MS));
      if (this.queued < last) stallSince = Date.now();
      last = this.queued;
      if (Date.now() - stallSince >= SLOW_CONSUMER_STALL_MS) break;
    }
    if (this.holder.isCancelled) return false;
    if (this.roomFor(bytes)) return true;
    this.noteFull();
    return false;
  }

  /**
   * Queues one frame without waiting. A terminal frame (EOSE, CLOSED) may use
   * TERMINAL_RESERVE_BYTES past the budgets and does not count toward the grace.
   */
  enqueue(frame: string | Buffer, terminal: boolean): SendResult {
    if (this.holder.isCancelled) return 'closed';
    const reserve = terminal ? TERMINAL_RESERVE_BYTES : 0;
    const bytes = typeof frame === 'string' ? Buffer.byteLength(frame) : frame.length;
    const fits =
      (terminal || this.inflightSends < this.limits.sendBuffer) &&
      (this.queued === 0 || this.queued + bytes <= this.limits.maxQueuedBytes + reserve) &&
      this.budget.makeRoom(this.holder, bytes, reserve);
    if (this.holder.isCancelled) return 'closed';
    if (!fits) {
      if (!terminal) this.noteFull();
      return this.holder.isCancelled ? 'closed' : 'full';
    }
    if (!terminal) this.consecutiveFull = 0;
    this.inflightSends += 1;
    this.queued += bytes;
    this.budget.add(bytes);
    this.corkUntilNextTick();
    const written = () => {
      this.inflightSends -= 1;
      if (this.released) return;
      this.queued -= bytes;
      this.budget.release(bytes);
      if (this.congested && this.queued <= this.limits.maxQueuedBytes / 2) this.congested = false;
    };
    if (typeof frame === 'string') this.ws.send(frame, written);
    else this.ws.send(frame, TEXT_FRAME, written);
    return 'sent';
  }

  /** Gives the queued bytes back to the process budget (socket gone). True the first time. */
  release(): boolean {
    if (this.released) return false;
    this.released = true;
    this.budget.release(this.queued);
    this.queued = 0;
    return true;
  }

  /** Hands what this turn queued to the socket now, in one write, instead of on the next tick. */
  flush(): void {
    if (!this.corked) return;
    this.corked = false;
    this.rawSocket()?.uncork();
  }

  /** One more send that did not fit; at the grace limit the client is disconnected. */
  private noteFull(): void {
    this.congested = true;
    this.consecutiveFull += 1;
    if (this.consecutiveFull >= this.limits.slowClientGraceLimit) this.holder.disconnectSlow();
  }

  /**
   * Frames sent in one turn (a history page, a burst of OKs) leave in one write instead of one
   * syscall each: the socket is corked at the first send and uncorked once the turn's
   * callbacks have run. Without a raw socket (tests with a stand-in) frames go out one by one.
   */
  private corkUntilNextTick(): void {
    if (this.corked) return;
    const socket = this.rawSocket();
    if (typeof socket?.cork !== 'function') return;
    this.corked = true;
    socket.cork();
    process.nextTick(() => this.flush());
  }

  private rawSocket(): { cork?: () => void; uncork: () => void } | undefined {
    return (this.ws as unknown as { _socket?: { cork?: () => void; uncork: () => void } })._socket;
  }
}
