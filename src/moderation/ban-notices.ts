import { Injectable } from '@nestjs/common';

export type BanListener = (communityId: string, pubkey: string) => Promise<void>;

/**
 * The immediate path from a ban to this pod's open sockets. Whatever writes a ban (today an
 * operator's SQL; later the moderation commands) calls `announce` after its commit, and the
 * listeners (BanEnforcer) re-check that key's sockets at once instead of at the next periodic
 * sweep. Process-local: other pods see the ban at their own next sweep (`BUZZ_BAN_RECHECK_MS`).
 */
@Injectable()
export class BanNotices {
  private readonly listeners = new Set<BanListener>();

  subscribe(listener: BanListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Resolves once every listener has acted (listeners do not reject). */
  async announce(communityId: string, pubkey: string): Promise<void> {
    await Promise.all([...this.listeners].map((listener) => listener(communityId, pubkey)));
  }
}
