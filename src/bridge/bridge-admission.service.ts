/**
 * The common request handling of every bridge route (relay.md §3.1 steps 2–6): bind the tenant
 * from `Host`, authenticate (NIP-98 or the dev header), apply the quota, mark the NIP-98 event
 * against replay, refuse a banned key and, when required, a non-member. Each refusal is an
 * HttpError with the spec's status and text.
 */
import { Inject, Injectable } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { HttpAuthService } from '../auth/http-auth.service.js';
import { verifyAuthTag } from '../auth/nip-oa.js';
import { HttpError } from '../common/http-error.js';
import { annotateRequest } from '../common/request-annotations.js';
import type { AppConfig } from '../config/app-config.js';
import { APP_CONFIG } from '../config/config.tokens.js';
import { DatabaseUnavailableError } from '@buzz-relay/read-path';
import { BanGate } from '../moderation/ban-gate.service.js';
import { BAN_REFUSALS } from '../moderation/ban.refusals.js';
import { ModerationRepository } from '../moderation/moderation.repository.js';
import { RateLimitService } from '../ratelimit/rate-limit.service.js';
import { INVALID_HOST_MESSAGE, TENANT_LOOKUP_FAILED_MESSAGE, TenancyService, UNKNOWN_HOST_MESSAGE } from '../tenancy/tenancy.service.js';
import { hostHeader } from '../common/host.js';
import { refusalError } from './refusal-status.js';

export interface BridgeCaller {
  readonly communityId: string;
  readonly pubkey: string;
  /** The NIP-OA owner proved by `x-auth-tag`, when the caller is an agent. */
  readonly owner: string | undefined;
}

/**
 * `read`: `/query` and `/count`, the API quota. `write`: `POST /events`, whose NIP-98 must carry a
 * `payload` tag and which counts against the messages quota as well, like a WebSocket EVENT.
 */
export type BridgeRoute = 'read' | 'write';

@Injectable()
export class BridgeAdmission {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly tenancy: TenancyService,
    private readonly auth: HttpAuthService,
    private readonly limits: RateLimitService,
    private readonly moderation: ModerationRepository,
    private readonly bans: BanGate,
  ) {}

  async admit(req: FastifyRequest, rawBody: string, route: BridgeRoute): Promise<BridgeCaller> {
    const tenant = await this.tenancy.resolve(hostHeader(req.raw.rawHeaders));
    // A failed lookup is the retryable database answer, not "no such community".
    if (!tenant.ok && tenant.reason === 'lookup_failed') throw new DatabaseUnavailableError(TENANT_LOOKUP_FAILED_MESSAGE);
    if (!tenant.ok && tenant.reason === 'invalid_host') throw new HttpError(400, INVALID_HOST_MESSAGE);
    if (!tenant.ok) throw new HttpError(404, UNKNOWN_HOST_MESSAGE);
    const communityId = tenant.community.id;
    annotateRequest(req, { community: communityId });
    const identity = await this.auth.authenticate({
      communityId,
      host: tenant.host,
      path: req.url.split('?')[0],
      query: req.url.includes('?') ? req.url.slice(req.url.indexOf('?')) : '',
      method: req.method,
      rawBody,
      authorization: header(req, 'authorization'),
      xPubkey: header(req, 'x-pubkey'),
      origin: header(req, 'origin'),
      remoteAddress: req.socket.remoteAddress,
      requirePayload: route === 'write',
    });
    const pubkey = identity.pubkey;
    annotateRequest(req, { pubkey });
    const owner = ownerFromHeader(header(req, 'x-auth-tag'), pubkey);
    const tier = owner === undefined ? 'human' : 'agent';
    const quota = route === 'write' ? await this.limits.httpWrite(communityId, pubkey, tier) : await this.limits.http(communityId, pubkey, tier);
    if (!quota.allowed) throw quota.unavailable ? new HttpError(503, quota.reason.wire) : refusalError(quota.reason);
    await this.auth.consumeReplay(communityId, identity);
    // A banned key (or the agent of a banned owner) gets nothing; a failed ban read is a database error (fail closed).
    if (await this.bans.isBanned(communityId, pubkey, owner)) throw refusalError(BAN_REFUSALS.banned);
    if (this.config.requireRelayMembership && !(await this.isMemberOrAgentOfMember(communityId, pubkey, owner))) {
      throw new HttpError(403, 'relay_membership_required', {
        error: 'relay_membership_required',
        message: 'You must be a relay member to access this relay',
      });
    }
    return { communityId, pubkey, owner };
  }

  /** Relay membership, or with BUZZ_ALLOW_NIP_OA_AUTH the proved owner's (relay.md §3.1 step 6). */
  private async isMemberOrAgentOfMember(communityId: string, pubkey: string, owner: string | undefined): Promise<boolean> {
    if (await this.moderation.isRelayMember(communityId, pubkey)) return true;
    return owner !== undefined && this.config.allowNipOaAuth && this.moderation.isRelayMember(communityId, owner);
  }
}

/**
 * The owner proved by the optional `x-auth-tag` header: a NIP-OA `auth` tag as a JSON array,
 * verified for the authenticated pubkey now. A header that is present but does not prove an
 * owner is refused with 401 rather than ignored.
 */
function ownerFromHeader(value: string | undefined, agent: string): string | undefined {
  if (value === undefined) return undefined;
  let tag: unknown;
  try {
    tag = JSON.parse(value);
  } catch {
    throw new HttpError(401, 'invalid x-auth-tag: not JSON');
  }
  if (!Array.isArray(tag) || tag[0] !== 'auth' || !tag.every((v) => typeof v === 'string')) {
    throw new HttpError(401, 'invalid x-auth-tag: must be a JSON array ["auth", owner, conditions, sig]');
  }
  const proof = verifyAuthTag(tag as string[], agent, Math.floor(Date.now() / 1000));
  if (proof.kind !== 'owner') throw new HttpError(401, `invalid x-auth-tag: ${proof.kind === 'invalid' ? proof.reason : 'no owner'}`);
  return proof.owner;
}

export function header(req: FastifyRequest, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}
