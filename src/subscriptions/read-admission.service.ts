/**
 * What a REQ or COUNT passes before anything is claimed: the reader's ban, its quota, then channel
 * access and the sensitive-kind gates, which give the read's scope. A refused read leaves an
 * existing same-id subscription alone; each refusal is a sub-scoped CLOSED.
 */
import { Injectable } from '@nestjs/common';
import { ReadAccessService } from '../channels/read-access.service.js';
import { ReadScope } from '../channels/read-scope.js';
import { BanGate } from '../moderation/ban-gate.service.js';
import { BAN_REFUSALS } from '../moderation/ban.refusals.js';
import { NostrFilter } from '../nostr/nostr.types.js';
import { RateLimitService } from '../ratelimit/rate-limit.service.js';
import { BanEnforcer } from './ban-enforcer.service.js';
import { RelayConnection } from './relay-connection.js';
import { closedFrame, closedReason } from './ws-reasons.js';

@Injectable()
export class ReadAdmission {
  constructor(
    private readonly readAccess: ReadAccessService,
    private readonly limits: RateLimitService,
    private readonly bans: BanGate,
    private readonly enforcer: BanEnforcer,
  ) {}

  /** The read's scope, or undefined once the read has been refused with CLOSED. */
  async admit(conn: RelayConnection, subId: string, filters: NostrFilter[], verb: 'REQ' | 'COUNT'): Promise<ReadScope | undefined> {
    if (await this.refusedForBan(conn, subId)) return undefined;
    const quota = await this.limits.ws(conn.communityId, conn.pubkey!, verb);
    if (!quota.allowed) {
      conn.send(closedFrame(subId, quota.reason));
      return undefined;
    }
    try {
      const decision = await this.readAccess.scopeFor(conn.communityId, conn.pubkey!, filters, verb === 'REQ' ? 'req' : 'count');
      if (decision.ok) return decision.scope;
      conn.send(closedFrame(subId, decision.reason));
    } catch (err) {
      conn.log.warn({ connId: conn.id, err }, 'channel access lookup failed');
      conn.send(closedFrame(subId, closedReason(err, 'admission')));
    }
    return undefined;
  }

  /**
   * A key banned since its AUTH (or whose proved NIP-OA owner is) reads nothing more: this
   * request is refused and the connection revoked. The answer comes from this pod's ban cache
   * when it has one (no query; see BanCache), else from the writer. A failed ban read refuses
   * (fail closed).
   */
  private async refusedForBan(conn: RelayConnection, subId: string): Promise<boolean> {
    let banned: boolean;
    try {
      banned = await this.bans.isBannedForRead(conn.communityId, conn.pubkey!, conn.nipOaOwner);
    } catch (err) {
      conn.log.warn({ connId: conn.id, err }, 'ban check failed');
      conn.send(closedFrame(subId, closedReason(err, 'admission')));
      return true;
    }
    if (!banned) return false;
    if (!conn.subscriptions.has(subId)) conn.send(closedFrame(subId, BAN_REFUSALS.banned));
    this.enforcer.revoke(conn);
    return true;
  }
}
