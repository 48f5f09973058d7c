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
 */
import type { AuthHoldLimits } from '../config/app-config.js';
import type { ClientMessage, InvalidClientMessage } from '../events/filter.js';

export type HeldMessage = Exclude<ClientMessage, { type: 'AUTH' }> | InvalidClientMessage;

export class AuthHold {
  private frames: Array<{ msg: HeldMessage; bytes: number }> = [];
  private bytes = 0;
  private graceOver = false;

  constructor(private readonly limits: AuthHoldLimits) {}

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

  /** Holds the frame when it fits both bounds; false (nothing changed) otherwise. */
  offer(msg: HeldMessage, bytes: number): boolean {
    if (this.frames.length + 1 > this.limits.maxFrames || this.bytes + bytes > this.limits.maxBytes) return false;
    this.frames.push({ msg, bytes });
    this.bytes += bytes;
    return true;
  }

  /**
   * Drops held REQs for `subId`: a later REQ or CLOSE for the id, answered at once because the hold
   * is full, supersedes them (NIP-01), so none may run after it.
   */
  supersede(subId: string): void {
    const kept = this.frames.filter(({ msg }) => msg.type !== 'REQ' || msg.subId !== subId);
    this.frames = kept;
    this.bytes = kept.reduce((sum, f) => sum + f.bytes, 0);
  }

  /** Everything held, in arrival order; the hold is empty afterwards. */
  drain(): HeldMessage[] {
    const frames = this.frames;
    this.frames = [];
    this.bytes = 0;
    return frames.map((f) => f.msg);
  }
}
