import { Injectable } from '@nestjs/common';

export type BanListener = (communityId: string, pubkey: string) => Promise<void>;
export type ResyncListener = () => Promise<void>;

/**
 * The immediate path from a ban to this pod's open sockets. Every change to `bans` reaches every
 * pod as a `buzz_bans` notification (BanNotifyListener), which calls `announce`; so may anything
 * in the process that writes a ban. The listeners (BanEnforcer) re-check that key's sockets at
 * once instead of at the next periodic sweep (`BUZZ_BAN_RECHECK_MS`).
 * `resync` says changes may have been missed (the ban listener was down, or `bans` was
 * truncated): the listeners re-check every socket.
 */
@Injectable()
export class BanNotices {
  private readonly listeners = new Set<BanListener>();
  private readonly resyncListeners = new Set<ResyncListener>();

  subscribe(listener: BanListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  onResync(listener: ResyncListener): () => void {
    this.resyncListeners.add(listener);
    return () => this.resyncListeners.delete(listener);
  }

  /** Resolves once every listener has acted (listeners do not reject). */
  async announce(communityId: string, pubkey: string): Promise<void> {
    await Promise.all([...this.listeners].map((listener) => listener(communityId, pubkey)));
  }

  /** Resolves once every resync listener has acted (they do not reject). */
  async resync(): Promise<void> {
    await Promise.all([...this.resyncListeners].map((listener) => listener()));
  }
}
