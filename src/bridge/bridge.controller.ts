/**
 * The HTTP bridge: `POST /query` and `POST /count`. Bodies arrive as raw text
 * (NIP-98 hashes the exact bytes); this controller binds the tenant,
 * authenticates, applies the quota, the ban and the relay-membership gates, parses the
 * filters and hands off. Failures are thrown and mapped to status and body by
 * DatabaseErrorFilter.
 */
import { Body, Controller, HttpCode, Inject, Post, Req, Res } from '@nestjs/common';
import type { ServerResponse } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { HttpAuthService } from '../auth/http-auth.service.js';
import { verifyAuthTag } from '../auth/nip-oa.js';
import { ReadAccessService } from '../channels/read-access.service.js';
import { HttpError } from '../common/http-error.js';
import { NostrEvent, NostrFilter } from '../common/nostr.types.js';
import type { AppConfig } from '../config/app-config.js';
import { APP_CONFIG } from '../config/config.tokens.js';
import { CountService, CountTooBroadError, COUNT_TOO_BROAD_MESSAGE } from '../events/count.service.js';
import { BanGate, BANNED_REASON } from '../moderation/ban-gate.service.js';
import { ModerationRepository } from '../moderation/moderation.repository.js';
import { RateLimitService } from '../ratelimit/rate-limit.service.js';
import { TenancyService, UNKNOWN_HOST_MESSAGE } from '../tenancy/tenancy.service.js';
import { parseBridgeFilters } from './bridge-filters.js';
import { BridgeQueryService, BridgeReader } from './bridge-query.service.js';

@Controller()
export class BridgeController {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly tenancy: TenancyService,
    private readonly auth: HttpAuthService,
    private readonly limits: RateLimitService,
    private readonly moderation: ModerationRepository,
    private readonly bans: BanGate,
    private readonly bridge: BridgeQueryService,
    private readonly access: ReadAccessService,
    private readonly counts: CountService,
  ) {}

  @Post('query')
  @HttpCode(200)
  async query(@Req() req: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply, @Body() body: unknown): Promise<NostrEvent[]> {
    const signal = clientGone(reply.raw);
    const { reader, filters } = await this.bind(req, body, true);
    return this.bridge.query({ ...reader, signal }, filters);
  }

  @Post('count')
  @HttpCode(200)
  async count(@Req() req: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply, @Body() body: unknown): Promise<{ count: number }> {
    const signal = clientGone(reply.raw);
    const { reader, filters } = await this.bind(req, body, false);
    const gate = this.access.gate(filters, reader.pubkey, 'count');
    if (gate) throw new HttpError(403, gate.reason);
    let total = 0;
    for (const f of filters) {
      const scope = await this.access.filterScope(reader.communityId, reader.pubkey, f);
      if (scope) total += await this.counts.count(scope, [f], { path: 'bridge_count', reader: reader.pubkey, signal }).catch(tooBroadIs400);
    }
    return { count: total };
  }

  private async bind(req: FastifyRequest, body: unknown, extensions: boolean): Promise<{ reader: BridgeReader; filters: NostrFilter[] }> {
    const tenant = await this.tenancy.resolve(req.headers.host);
    if (!tenant.ok) throw new HttpError(404, UNKNOWN_HOST_MESSAGE);
    const communityId = tenant.community.id;
    const rawBody = typeof body === 'string' ? body : '';
    const identity = await this.auth.authenticate({
      communityId,
      host: tenant.host,
      path: req.url.split('?')[0],
      method: req.method,
      rawBody,
      authorization: header(req, 'authorization'),
      xPubkey: header(req, 'x-pubkey'),
      remoteAddress: req.socket.remoteAddress,
    });
    const pubkey = identity.pubkey;
    const owner = ownerFromHeader(header(req, 'x-auth-tag'), pubkey);
    const quota = await this.limits.http(communityId, pubkey, owner === undefined ? 'human' : 'agent');
    if (!quota.allowed) throw new HttpError(quota.unavailable ? 503 : 429, quota.reason);
    await this.auth.consumeReplay(communityId, identity);
    // A banned key (or the agent of a banned owner) reads nothing; a failed ban read is a database error (fail closed).
    if (await this.bans.isBanned(communityId, pubkey, owner)) throw new HttpError(403, BANNED_REASON);
    if (this.config.requireRelayMembership && !(await this.isMemberOrAgentOfMember(communityId, pubkey, owner))) {
      throw new HttpError(403, 'relay_membership_required', {
        error: 'relay_membership_required',
        message: 'You must be a relay member to access this relay',
      });
    }
    return { reader: { communityId, pubkey }, filters: parseBridgeFilters(rawBody, extensions) };
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

function tooBroadIs400(err: unknown): never {
  throw err instanceof CountTooBroadError ? new HttpError(400, COUNT_TOO_BROAD_MESSAGE) : err;
}

/**
 * Aborted when the response is closed before it was written out: the client went away, and a
 * read still running for it is cancelled in Postgres (docs/security.md, Read cost bounds).
 */
function clientGone(res: ServerResponse): AbortSignal {
  const gone = new AbortController();
  res.once('close', () => {
    if (!res.writableFinished) gone.abort();
  });
  return gone.signal;
}

function header(req: FastifyRequest, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}
