/**
 * The frames a connection sent before its AUTH succeeded. Clients subscribe and
 * publish right after connecting, before their AUTH lands; refusing those frames
 * leaves libraries that never resubscribe with nothing live. So they wait here,
 * in arrival order, bounded in count and bytes, until the AUTH outcome decides:
 * run them all in order, or refuse them all.
 *
 * Waiting is for a client that is answering the challenge. One that sent no AUTH
 * within the grace (BUZZ_AUTH_HOLD_GRACE_MS) has no auth handler, or a broken one:
 * its held frames are refused then, and later ones at once (`expired`), so its
 * publishes fail with the `auth-required:` reason rather than the client's own
 * timeout. An AUTH that arrives later still counts, and frames sent while it is
 * being verified wait for it again.
 *
 * A frame is held as the text the client sent (parsed again when it runs): its size is then
 * what it costs, where a parsed filter of many short values takes several times its text. Held
 * bytes are also taken from the process's `auth_hold` memory pool, so a thousand connections
 * each within its own bounds still cannot hold more than the pool in all.
 */
import type { AuthHoldLimits } from '../config/app-config.js';
import { ClientMessage, InvalidClientMessage, parseClientMessage } from '../nostr/client-message.js';
import type { MemoryPool } from '../memory/memory-budget.js';

export type HeldMessage = Exclude<ClientMessage, { type: 'AUTH' }> | InvalidClientMessage;

/** What offer() did: held it, or not because the connection's bounds (`full`) or the process pool (`memory`) had no room. */
export type HoldOutcome = 'held' | 'full' | 'memory';

interface HeldFrame {
  readonly type: HeldMessage['type'];
  readonly subId: string | undefined;
  readonly text: string;
  readonly bytes: number;
}

export class AuthHold {
  private frames: HeldFrame[] = [];
  private bytes = 0;
  private graceOver = false;

  constructor(
    private readonly limits: AuthHoldLimits,
    private readonly pool?: MemoryPool,
  ) {}

  /** How long after the challenge frames wait for an AUTH that has not arrived. */
  get graceMs(): number {
    return this.limits.graceMs;
  }

  /** The grace passed with no AUTH: frames are no longer held for one that is not under way. */
  get expired(): boolean {
    return this.graceOver;
  }

  expire(): void {
    this.graceOver = true;
  }

  get size(): number {
    return this.frames.length;
  }

  get heldBytes(): number {
    return this.bytes;
  }

  /** Holds the frame (`text`, parsed as `msg`) when it fits the connection's bounds and the process pool; nothing changes otherwise. */
  offer(msg: HeldMessage, text: string, bytes: number): HoldOutcome {
    if (this.frames.length + 1 > this.limits.maxFrames || this.bytes + bytes > this.limits.maxBytes) return 'full';
    if (this.pool?.take(bytes) !== undefined) return 'memory';
    this.frames.push({ type: msg.type, subId: 'subId' in msg ? msg.subId : undefined, text, bytes });
    this.bytes += bytes;
    return 'held';
  }

  /**
   * Drops held REQs for `subId`: a later REQ or CLOSE for the id, answered at once because the hold
   * is full, supersedes them (NIP-01), so none may run after it.
   */
  supersede(subId: string): void {
    const kept = this.frames.filter((f) => f.type !== 'REQ' || f.subId !== subId);
    const bytes = kept.reduce((sum, f) => sum + f.bytes, 0);
    this.pool?.release(this.bytes - bytes);
    this.frames = kept;
    this.bytes = bytes;
  }

  /** Everything held, in arrival order, parsed again; the hold is empty (its bytes released) afterwards. */
  drain(): HeldMessage[] {
    const frames = this.frames;
    this.pool?.release(this.bytes);
    this.frames = [];
    this.bytes = 0;
    return frames.map((f) => parseClientMessage(f.text) as HeldMessage);
  }

  /** Drops everything held (the connection is gone) and releases its bytes. */
  clear(): void {
    this.pool?.release(this.bytes);
    this.frames = [];
    this.bytes = 0;
  }
}
