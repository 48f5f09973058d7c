/**
 * Closes the sockets of a key that lost access without a ban (relay.md §2.9 "access revoked"):
 * removed from the relay (9031, 28936, the operator CLI) while this pod enforces membership, for
 * revocations announced here or carried from another pod by the Redis bridge. Each live
 * subscription ends with `CLOSED "restricted: not a relay member"`, then the socket closes with
 * 1008 "access revoked". Sockets of agents admitted through that key as NIP-OA owner close too.
 */
import { Inject, Injectable, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import type { AppConfig } from '../config/app-config.js';
import { APP_CONFIG } from '../config/config.tokens.js';
import { AccessRevocation, AccessRevocations } from '../moderation/access-revocations.js';
import { AUTH_REFUSALS } from './auth.refusals.js';
import { LiveFanout } from './live-fanout.service.js';
import { RelayConnection } from './relay-connection.js';
import { closedFrame } from './ws-reasons.js';

@Injectable()
export class AccessRevoker implements OnModuleInit, OnModuleDestroy {
  private unsubscribe: (() => void) | undefined;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly fanout: LiveFanout,
    private readonly revocations: AccessRevocations,
  ) {}

  onModuleInit(): void {
    this.unsubscribe = this.revocations.subscribe((r) => this.revoke(r));
  }

  onModuleDestroy(): void {
    this.unsubscribe?.();
  }

  /** Closes the key's sockets here; a pod that does not enforce membership (BUZZ_REQUIRE_RELAY_MEMBERSHIP) keeps them. */
  revoke({ communityId, pubkey }: AccessRevocation): number {
    if (!this.config.requireRelayMembership) return 0;
    const held = [...this.fanout.connections()].filter((c) => c.communityId === communityId && holds(c, pubkey));
    for (const conn of held) {
      for (const [subId, sub] of [...conn.subscriptions]) {
        if (conn.retireIfOwner(subId, sub.token)) conn.send(closedFrame(subId, AUTH_REFUSALS.notRelayMember));
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
