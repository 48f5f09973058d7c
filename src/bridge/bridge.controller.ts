/**
 * The HTTP bridge: `POST /query` and `POST /count`. Bodies arrive as raw text
 * (NIP-98 hashes the exact bytes); this controller parses them, binds the
 * tenant, authenticates and hands off. Failures are thrown and mapped to status
 * and body by DatabaseErrorFilter.
 */
import { Body, Controller, HttpCode, Post, Req } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { HttpAuthService } from '../auth/http-auth.service.js';
import { HttpError } from '../common/http-error.js';
import { NostrEvent, NostrFilter } from '../common/nostr.types.js';
import { EventQueryService } from '../events/event-query.service.js';
import { communityWide } from '../events/read-scope.js';
import { TenancyService, UNKNOWN_HOST_MESSAGE } from '../tenancy/tenancy.service.js';
import { parseBridgeFilters } from './bridge-filters.js';

interface BoundRequest {
  readonly communityId: string;
  readonly pubkey: string;
  readonly filters: NostrFilter[];
}

@Controller()
export class BridgeController {
  constructor(
    private readonly tenancy: TenancyService,
    private readonly auth: HttpAuthService,
    private readonly queries: EventQueryService,
  ) {}

  @Post('query')
  @HttpCode(200)
  async query(@Req() req: FastifyRequest, @Body() body: unknown): Promise<NostrEvent[]> {
    const { communityId, filters } = await this.bind(req, body, true);
    const out: NostrEvent[] = [];
    for await (const batch of this.queries.history(communityWide(communityId), filters, false)) out.push(...batch);
    return out;
  }

  @Post('count')
  @HttpCode(200)
  async count(@Req() req: FastifyRequest, @Body() body: unknown): Promise<{ count: number }> {
    const { communityId, filters } = await this.bind(req, body, false);
    return { count: await this.queries.count(communityWide(communityId), filters) };
  }

  private async bind(req: FastifyRequest, body: unknown, extensions: boolean): Promise<BoundRequest> {
    const tenant = await this.tenancy.resolve(req.headers.host);
    if (!tenant.ok) throw new HttpError(404, UNKNOWN_HOST_MESSAGE);
    const rawBody = typeof body === 'string' ? body : '';
    const pubkey = await this.auth.authenticate({
      communityId: tenant.community.id,
      host: tenant.host,
      path: req.url.split('?')[0],
      method: req.method,
      rawBody,
      authorization: header(req, 'authorization'),
      xPubkey: header(req, 'x-pubkey'),
    });
    return { communityId: tenant.community.id, pubkey, filters: parseBridgeFilters(rawBody, extensions) };
  }
}

function header(req: FastifyRequest, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}
