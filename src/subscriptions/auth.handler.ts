import { Inject, Injectable } from '@nestjs/common';
import { authEventProblem } from '../auth/nip42.js';
import { ownerProof } from '../auth/nip-oa.js';
import type { AppConfig } from '../config/app-config.js';
import { APP_CONFIG } from '../config/config.tokens.js';
import { parseEvent } from '../nostr/event-validation.js';
import { Refusal } from '../nostr/refusal.js';
import { SignatureVerifier } from '../events/signature-verifier.js';
import { RelayMetrics } from '../metrics/relay-metrics.service.js';
import { BAN_REFUSALS } from '../moderation/ban.refusals.js';
import { ModerationRepository } from '../moderation/moderation.repository.js';
import { ConnectionAdmission } from './connection-admission.service.js';
import { RelayConnection } from './relay-connection.js';
import { AUTH_REFUSALS } from './auth.refusals.js';
import { okReason, okRefused } from './ws-reasons.js';

/** Close code of a socket whose key holds BUZZ_MAX_CONNECTIONS_PER_KEY authenticated sockets on this pod. */
export const KEY_CONNECTIONS_CLOSE_CODE = 1008;

type Refused = { outcome: string; refusal: Refusal; close: boolean };
type Verdict = { ok: true; pubkey: string; owner: string | undefined } | ({ ok: false } & Refused);

/**
 * NIP-42. Exactly one terminal outcome per connection; later AUTH frames are
 * answered without changing it. Frames that arrive while an AUTH is being
 * verified wait for it (AUTH runs inline, one frame at a time). Verification
 * (the signature workers, then the ban, allowlist and membership lookups) is
 * bounded by BUZZ_AUTH_VERIFY_TIMEOUT_MS: the relay's own queue, not the
 * client's 5 s deadline, which stops once the AUTH frame has arrived.
 */
@Injectable()
export class AuthHandler {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly verifier: SignatureVerifier,
    private readonly metrics: RelayMetrics,
    private readonly moderation: ModerationRepository,
    private readonly connections: ConnectionAdmission,
  ) {}

  handle(conn: RelayConnection, raw: unknown): Promise<void> {
    conn.authFramesInFlight += 1;
    const run = (conn.pendingAuth ?? Promise.resolve()).then(() => this.authenticate(conn, raw)).finally(() => (conn.authFramesInFlight -= 1));
    conn.pendingAuth = run.catch(() => undefined);
    return conn.pendingAuth;
  }

  private async authenticate(conn: RelayConnection, raw: unknown): Promise<void> {
    const id = typeof (raw as { id?: unknown })?.id === 'string' ? (raw as { id: string }).id : '';
    if (conn.authState !== 'pending') {
      conn.send(okRefused(id, conn.authState === 'authenticated' ? AUTH_REFUSALS.alreadyAuthenticated : AUTH_REFUSALS.alreadyFailed));
      return;
    }
    const verdict = await this.bounded(this.verify(conn, raw));
    // The socket closed while the relay verified: nothing to answer.
    if (conn.isCancelled || conn.authState !== 'pending') return;
    if (verdict === 'timeout') {
      conn.authState = 'failed';
      this.metrics.wsAuthTimeouts.inc();
      this.metrics.authOutcomes.inc({ method: 'nip42', outcome: 'timeout' });
      conn.log.warn({ connId: conn.id, boundMs: this.config.authVerifyTimeoutMs }, 'AUTH not verified within the relay bound; closing');
      conn.send(okRefused(id, AUTH_REFUSALS.verifyTimeout));
      conn.cancel();
      return;
    }
    if (!verdict.ok) {
      conn.authState = 'failed';
      this.metrics.authOutcomes.inc({ method: 'nip42', outcome: verdict.outcome });
      conn.send(okRefused(id, verdict.refusal));
      if (verdict.close) conn.cancel();
      return;
    }
    // Counted once the key is known and every other check passed: teardown releases it.
    if (!this.connections.claimKey(verdict.pubkey)) {
      conn.authState = 'failed';
      this.metrics.authOutcomes.inc({ method: 'nip42', outcome: 'key_connection_limit' });
      conn.send(okRefused(id, AUTH_REFUSALS.keyConnections(this.config.limits.maxConnectionsPerKey)));
      conn.cancel(KEY_CONNECTIONS_CLOSE_CODE, AUTH_REFUSALS.keyConnectionsClose.wire);
      return;
    }
    conn.authState = 'authenticated';
    conn.pubkey = verdict.pubkey;
    conn.nipOaOwner = verdict.owner;
    this.metrics.authOutcomes.inc({ method: 'nip42', outcome: 'success' });
    this.metrics.wsAuthenticatedActive.inc();
    conn.log.debug({ connId: conn.id, nipOaOwner: verdict.owner !== undefined }, 'NIP-42 auth successful');
    conn.send(['OK', id, true, '']);
  }

  /** The verification, or 'timeout' once BUZZ_AUTH_VERIFY_TIMEOUT_MS passed (the work's late outcome is dropped). */
  private async bounded(work: Promise<Verdict>): Promise<Verdict | 'timeout'> {
    work.catch(() => undefined); // a late failure after the bound is nobody's to handle
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), this.config.authVerifyTimeoutMs)));
    try {
      return await Promise.race([work, bound]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** §2.5 steps 1–5, without touching the connection's state. */
  private async verify(conn: RelayConnection, raw: unknown): Promise<Verdict> {
    const parsed = parseEvent(raw);
    const problem = parsed.ok
      ? authEventProblem(parsed.event, {
          challenge: conn.challenge,
          tenantHost: conn.host,
          scheme: this.config.relayUrl.startsWith('wss://') ? 'wss:' : 'ws:',
          nowSecs: Math.floor(Date.now() / 1000),
        })
      : undefined;
    const valid = parsed.ok && problem === undefined && (await this.verifier.verify(parsed.event, 'auth')).ok;
    // A NIP-OA owner claim is part of the AUTH event: one that does not verify fails verification.
    const proof = valid && parsed.ok ? ownerProof(parsed.event) : undefined;
    if (!valid || !parsed.ok || proof?.kind === 'invalid') {
      return { ok: false, outcome: 'invalid', refusal: AUTH_REFUSALS.verificationFailed(problem), close: false };
    }
    const owner = proof?.kind === 'owner' ? proof.owner : undefined;
    const refusal = await this.admission(conn, parsed.event.pubkey, owner);
    if (refusal) return { ok: false, ...refusal };
    if (owner !== undefined) await this.recordOwner(conn, parsed.event.pubkey, owner);
    return { ok: true, pubkey: parsed.event.pubkey, owner };
  }

  /**
   * §2.5 step 5: the agent → owner mapping, first write wins; on a closed relay only for a member
   * owner. A failure here does not undo the authentication: it is logged and the mapping is
   * recorded at a later AUTH.
   */
  private async recordOwner(conn: RelayConnection, agent: string, owner: string): Promise<void> {
    try {
      if (this.config.requireRelayMembership && !(await this.moderation.isRelayMember(conn.communityId, owner))) return;
      await this.moderation.recordAgentOwner(conn.communityId, agent, owner);
    } catch (err) {
      conn.log.warn({ connId: conn.id, err }, 'could not record the NIP-OA owner of an agent');
    }
  }

  /**
   * The spec's order after the signature: ban (an owner ban cascades to its agent), allowlist,
   * relay membership (or, with BUZZ_ALLOW_NIP_OA_AUTH, the proved owner's). All read the writer.
   */
  private async admission(conn: RelayConnection, pubkey: string, owner: string | undefined): Promise<Refused | undefined> {
    try {
      for (const subject of owner === undefined ? [pubkey] : [pubkey, owner]) {
        const restriction = await this.moderation.restrictionOf(conn.communityId, subject);
        if (restriction.kind === 'banned') return { outcome: 'banned', refusal: BAN_REFUSALS.banned, close: true };
      }
    } catch (err) {
      return { outcome: 'ban_check_error', refusal: okReason(err, 'auth_ban_check'), close: true };
    }
    if (this.config.pubkeyAllowlist) {
      const allowed = await this.moderation.isAllowlisted(conn.communityId, pubkey).catch(() => false);
      if (!allowed) return { outcome: 'allowlist_denied', refusal: AUTH_REFUSALS.verificationFailed(), close: false };
    }
    if (this.config.requireRelayMembership) {
      let member: boolean;
      try {
        member = await this.moderation.isRelayMember(conn.communityId, pubkey);
        // Admit "via owner": the agent is not a member, its proved owner is.
        if (!member && owner !== undefined && this.config.allowNipOaAuth) member = await this.moderation.isRelayMember(conn.communityId, owner);
      } catch {
        return { outcome: 'relay_membership_check_error', refusal: AUTH_REFUSALS.notRelayMember, close: false };
      }
      if (!member) return { outcome: 'not_relay_member', refusal: AUTH_REFUSALS.notRelayMember, close: false };
    }
    return undefined;
  }
}
