/**
 * How fast one address's unauthenticated connections are read, all of them together
 * (BUZZ_PREAUTH_INPUT_BYTES_PER_IP; docs/security.md, "Before AUTH").
 *
 * Before AUTH a connection costs the relay the same CPU per frame as after it (read, unmask,
 * decode, parse, hold or refuse), but nothing is known about who sends it, so the per-key shares
 * cannot apply and the per-connection input rate does not help against a thousand sockets. So the
 * frames read before AUTH succeeds (the AUTH frame itself is free) are spent from a token bucket
 * of their address: burst BURST_SECONDS of the rate, refilled at the rate. A connection whose
 * address is in debt stops being read, and so does a new connection from that address (before its
 * first read); they wait their turn in arrival order and are let read again one at a time as the
 * debt is repaid, each turn charged RELEASE_BYTES up front (a socket read delivers up to 64 KiB at
 * once, after which pausing is too late for those frames). A waiting connection's frames stay in
 * its socket and TCP window; nothing is refused, and the AUTH deadline closes it as usual. Honest
 * clients send an AUTH and a few small REQs before AUTH, far below the burst, even a thousand of
 * them behind one NAT; a flood from one address is read at the rate while every other address is
 * read as before.
 */
import { performance } from 'node:perf_hooks';
import { holdInput, isHeld, releaseInput } from './input-holds.js';
import type { RelayConnection } from './relay-connection.js';

/** The bucket holds this many seconds of the rate. */
export const BURST_SECONDS = 4;
/** Charged when a waiting connection is let read again: about what one socket read can bring in. */
export const RELEASE_BYTES = 16 * 1024;

export interface PreAuthInputOptions {
  /** Bytes per second for all of one address's unauthenticated connections together; 0 turns the budget off. */
  readonly bytesPerSecond: number;
  /** True while the process drains: waiting sockets are then left to graceful shutdown. */
  readonly draining: () => boolean;
  /** Connections stopped by their address's budget (buzz_ws_preauth_paced_total). */
  readonly paced?: { inc(): void };
  /** Connections waiting for their address's budget (buzz_ws_preauth_waiting). */
  readonly waiting?: { inc(): void; dec(): void };
  readonly now?: () => number;
}

interface AddressBudget {
  readonly key: string;
  tokens: number;
  at: number;
  /** Connections from this address not yet authenticated and not closed. */
  open: number;
  /** Waiting connections in arrival order; some may have left since (skipped on release). */
  queue: RelayConnection[];
  /** The next release of waiting connections. */
  timer: NodeJS.Timeout | undefined;
  /** Forgets the address once no connection is left and its debt is repaid. */
  forget: NodeJS.Timeout | undefined;
}

export class PreAuthInput {
  private readonly addresses = new Map<string, AddressBudget>();
  private readonly budgetOf = new WeakMap<RelayConnection, AddressBudget>();
  readonly burstBytes: number;
  private readonly now: () => number;

  constructor(private readonly options: PreAuthInputOptions) {
    this.burstBytes = BURST_SECONDS * options.bytesPerSecond;
    this.now = options.now ?? (() => performance.now());
  }

  /** Addresses with a budget in memory (open connections, or debt not yet repaid). */
  get trackedAddresses(): number {
    return this.addresses.size;
  }

  /** A new connection from `address`: it waits before its first read when others from there wait or owe. */
  opened(conn: RelayConnection, address: string): void {
    if (this.options.bytesPerSecond <= 0) return;
    let a = this.addresses.get(address);
    if (a === undefined) this.addresses.set(address, (a = { key: address, tokens: this.burstBytes, at: this.now(), open: 0, queue: [], timer: undefined, forget: undefined }));
    clearTimeout(a.forget);
    a.forget = undefined;
    a.open += 1;
    this.budgetOf.set(conn, a);
    this.refill(a);
    if (a.tokens < 0 || a.queue.length > 0) this.wait(conn, a);
  }

  /** A frame other than AUTH, read before AUTH succeeded. */
  charge(conn: RelayConnection, bytes: number): void {
    const a = this.budgetOf.get(conn);
    if (a === undefined) return;
    this.refill(a);
    a.tokens -= bytes;
    if (a.tokens < 0) this.wait(conn, a);
  }

  /** The connection authenticated or closed: its address's budget no longer applies to it. */
  leave(conn: RelayConnection): void {
    const a = this.budgetOf.get(conn);
    if (a === undefined) return;
    this.budgetOf.delete(conn);
    a.open -= 1;
    if (isHeld(conn, 'preauth')) {
      this.options.waiting?.dec();
      releaseInput(conn, 'preauth');
    }
    this.forgetWhenIdle(a);
  }

  private wait(conn: RelayConnection, a: AddressBudget): void {
    if (isHeld(conn, 'preauth')) return;
    holdInput(conn, 'preauth');
    a.queue.push(conn);
    this.options.paced?.inc();
    this.options.waiting?.inc();
    this.schedule(a);
  }

  private schedule(a: AddressBudget): void {
    if (a.timer !== undefined) return;
    const ms = a.tokens >= 0 ? 0 : Math.ceil((-a.tokens / this.options.bytesPerSecond) * 1000);
    a.timer = setTimeout(() => {
      a.timer = undefined;
      this.release(a);
    }, ms);
    a.timer.unref();
  }

  /** Lets waiting connections read again, in arrival order, while the budget is not in debt. */
  private release(a: AddressBudget): void {
    if (this.options.draining()) return;
    this.refill(a);
    while (a.tokens >= 0 && a.queue.length > 0) {
      const conn = a.queue.shift()!;
      if (!isHeld(conn, 'preauth')) continue;
      this.options.waiting?.dec();
      a.tokens -= RELEASE_BYTES;
      releaseInput(conn, 'preauth');
    }
    if (a.queue.length > 0) this.schedule(a);
    else this.forgetWhenIdle(a);
  }

  /** An address with no connection left is forgotten once its debt is repaid, not before (a reconnect starts no fresher). */
  private forgetWhenIdle(a: AddressBudget): void {
    if (a.open > 0 || a.timer !== undefined || a.forget !== undefined) return;
    this.refill(a);
    if (a.tokens >= this.burstBytes) {
      this.addresses.delete(a.key);
      return;
    }
    a.queue = [];
    const ms = Math.ceil(((this.burstBytes - a.tokens) / this.options.bytesPerSecond) * 1000);
    a.forget = setTimeout(() => {
      a.forget = undefined;
      if (a.open === 0) this.addresses.delete(a.key);
    }, ms);
    a.forget.unref();
  }

  private refill(a: AddressBudget): void {
    const now = this.now();
    a.tokens = Math.min(this.burstBytes, a.tokens + ((now - a.at) / 1000) * this.options.bytesPerSecond);
    a.at = now;
  }
}
