/**
 * Closes the sockets of a key that lost access without a ban (relay.md §2.9 "access revoked"):
 * removed from a relay that enforces membership (9031, 28936, the operator CLI), on this pod, for
 * revocations announced here or carried from another pod by the Redis bridge. Each live
 * subscription ends with `CLOSED "restricted: not a relay member"`, then the socket closes with
 * 1008 "access revoked". Sockets of agents admitted through that key as NIP-OA owner close too.
 */
import { Injectable, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { AccessRevocation, AccessRevocations } from '../moderation/access-revocations.js';
import { LiveFanout } from './live-fanout.service.js';
import { RelayConnection } from './relay-connection.js';

export const NOT_RELAY_MEMBER = 'restricted: not a relay member';

@Injectable()
export class AccessRevoker implements OnModuleInit, OnModuleDestroy {
  private unsubscribe: (() => void) | undefined;

  constructor(
    private readonly fanout: LiveFanout,
    private readonly revocations: AccessRevocations,
  ) {}

  onModuleInit(): void {
    this.unsubscribe = this.revocations.subscribe((r) => this.revoke(r));
  }

  onModuleDestroy(): void {
    this.unsubscribe?.();
  }

  revoke({ communityId, pubkey }: AccessRevocation): number {
    const held = [...this.fanout.connections()].filter((c) => c.communityId === communityId && holds(c, pubkey));
    for (const conn of held) {
      for (const [subId, sub] of [...conn.subscriptions]) {
        if (conn.retireIfOwner(subId, sub.token)) conn.send(['CLOSED', subId, NOT_RELAY_MEMBER]);
      }
      conn.log.info({ connId: conn.id }, 'connection revoked: no longer a relay member');
      conn.cancel(1008, 'access revoked');
    }
    return held.length;
  }
}

function holds(conn: RelayConnection, pubkey: string): boolean {
  if (conn.isCancelled || conn.authState !== 'authenticated') return false;
  return conn.pubkey === pubkey || conn.nipOaOwner === pubkey;
}
