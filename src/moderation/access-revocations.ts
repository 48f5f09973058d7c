import { Injectable } from '@nestjs/common';

/** Why a pubkey lost access: today only removal from a relay that enforces membership. */
export type RevocationReason = 'not_relay_member';

export interface AccessRevocation {
  readonly communityId: string;
  readonly pubkey: string;
  readonly reason: RevocationReason;
}

export type RevocationListener = (revocation: AccessRevocation, origin: 'local' | 'remote') => void;

/**
 * The path from a membership removal (9031, 28936, the operator CLI) to open sockets, the
 * counterpart of BanNotices for access that is lost without a ban. Whatever removes a member
 * announces it after the commit; the subscriptions module closes that key's sockets on this pod
 * (AccessRevoker), and the Redis bridge (RevocationBridge) carries `local` announcements to the
 * other pods, which announce them again as `remote`.
 */
@Injectable()
export class AccessRevocations {
  private readonly listeners = new Set<RevocationListener>();

  subscribe(listener: RevocationListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  announce(revocation: AccessRevocation, origin: 'local' | 'remote' = 'local'): void {
    for (const listener of this.listeners) {
      try {
        listener(revocation, origin);
      } catch {
        // One faulty listener must not keep the others from acting.
      }
    }
  }
}
