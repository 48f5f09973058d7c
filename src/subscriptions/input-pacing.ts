/**
 * How fast one connection's frames are read: bounded work per client per second.
 *
 * Every frame's bytes are spent from the connection's token bucket (burst: two of the largest
 * frames the relay accepts; refill: half of one a second, 256 KiB/s at the default 512 KiB frame
 * cap). A connection in debt is not read (`ws.pause()`) until the debt is repaid: its next frames
 * wait in its own socket and TCP window, not in this process, and nothing is refused. A chat
 * client's frames are far below the rate; a client that sends large frames fast (thousands of
 * filter values per REQ) is slowed to it, so the decoding, parsing, validation and queries its
 * frames cost are spread over time instead of holding the event loop for everyone.
 */
import { performance } from 'node:perf_hooks';
import { holdInput, releaseInput } from './input-holds.js';
import type { RelayConnection } from './relay-connection.js';

interface Bucket {
  tokens: number;
  at: number;
  resumeTimer: NodeJS.Timeout | undefined;
}

export interface InputPacingOptions {
  readonly maxFrameBytes: number;
  /** True while the process drains: a paced socket is then left paused (graceful shutdown resumes it). */
  readonly draining: () => boolean;
  /** Counts each time a connection stops being read (buzz_ws_input_paced_total). */
  readonly paced?: { inc(): void };
  readonly now?: () => number;
}

export class InputPacing {
  private readonly buckets = new WeakMap<RelayConnection, Bucket>();
  readonly burstBytes: number;
  readonly bytesPerSecond: number;
  private readonly now: () => number;

  constructor(private readonly options: InputPacingOptions) {
    this.burstBytes = 2 * options.maxFrameBytes;
    this.bytesPerSecond = Math.max(1, Math.floor(options.maxFrameBytes / 2));
    this.now = options.now ?? (() => performance.now());
  }

  /**
   * Spends a frame's bytes; when the connection is left in debt it stops being read until the
   * debt is repaid. Returns the pause in ms (0: keep reading).
   */
  read(conn: RelayConnection, bytes: number): number {
    let b = this.buckets.get(conn);
    if (b === undefined) this.buckets.set(conn, (b = { tokens: this.burstBytes, at: this.now(), resumeTimer: undefined }));
    this.refill(b);
    b.tokens -= bytes;
    const waitMs = this.debtMs(b);
    if (waitMs > 0 && b.resumeTimer === undefined) {
      this.options.paced?.inc();
      holdInput(conn, 'pacing');
      this.resumeAfter(conn, b, waitMs);
    }
    return waitMs;
  }

  private refill(b: Bucket): void {
    const now = this.now();
    b.tokens = Math.min(this.burstBytes, b.tokens + ((now - b.at) / 1000) * this.bytesPerSecond);
    b.at = now;
  }

  private debtMs(b: Bucket): number {
    return b.tokens >= 0 ? 0 : Math.ceil((-b.tokens / this.bytesPerSecond) * 1000);
  }

  private resumeAfter(conn: RelayConnection, b: Bucket, waitMs: number): void {
    b.resumeTimer = setTimeout(() => {
      b.resumeTimer = undefined;
      if (conn.isCancelled || this.options.draining()) return;
      // Frames ws had already read when the pause took effect may have added debt: wait for it too.
      this.refill(b);
      const more = this.debtMs(b);
      if (more > 0) return this.resumeAfter(conn, b, more);
      releaseInput(conn, 'pacing');
    }, waitMs);
    b.resumeTimer.unref();
  }
}
