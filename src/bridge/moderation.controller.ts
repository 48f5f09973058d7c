/**
 * The moderator's reading of the queue (relay.md §3.9, `/moderation/{reports,audit}`: NIP-98 plus
 * moderator authorisation): `GET /moderation/reports` lists the community's NIP-56 reports (kind
 * 1984), `GET /moderation/audit` its moderation decisions (9040–9044 and the operator CLI). The
 * caller passes the common admission of the bridge (tenant, NIP-98, quota, replay, bans, relay
 * membership) and must be a moderator: the configured owner, an operator, or a relay owner or
 * admin; anyone else gets 403 `restricted: moderator access required` (MODERATION_REFUSALS).
 */
import { Controller, Get, Query, Req } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { HttpError } from '../common/http-error.js';
import { ReportStatus } from '@buzz-relay/read-path';
import { MODERATION_REFUSALS } from '../commands/moderation.refusals.js';
import { LISTING_MAX, ModerationQueueRepository } from '../moderation/moderation-queue.repository.js';
import { RelayAuthority } from '../moderation/relay-authority.service.js';
import { BridgeAdmission } from './bridge-admission.service.js';
import { refusalError } from './refusal-status.js';

const STATUSES: readonly ReportStatus[] = ['open', 'resolved', 'dismissed'];
const DEFAULT_LIMIT = 100;

@Controller('moderation')
export class ModerationController {
  constructor(
    private readonly admission: BridgeAdmission,
    private readonly authority: RelayAuthority,
    private readonly queue: ModerationQueueRepository,
  ) {}

  @Get('reports')
  async reports(@Req() req: FastifyRequest, @Query('status') status?: string, @Query('limit') limit?: string): Promise<{ reports: unknown[] }> {
    const communityId = await this.moderator(req);
    if (status !== undefined && !(STATUSES as readonly string[]).includes(status)) throw new HttpError(400, `invalid status: expect ${STATUSES.join('|')}`);
    const rows = await this.queue.reports(communityId, status as ReportStatus | undefined, limitOf(limit));
    return { reports: rows.map((r) => ({ ...r, resolved_at: unix(r.resolved_at), created_at: unix(r.created_at) })) };
  }

  @Get('audit')
  async audit(@Req() req: FastifyRequest, @Query('limit') limit?: string): Promise<{ actions: unknown[] }> {
    const communityId = await this.moderator(req);
    const rows = await this.queue.actions(communityId, limitOf(limit));
    return { actions: rows.map((r) => ({ ...r, expires_at: unix(r.expires_at), created_at: unix(r.created_at) })) };
  }

  private async moderator(req: FastifyRequest): Promise<string> {
    const caller = await this.admission.admit(req, '', 'read');
    const { authority } = await this.queue.withWriter('authorization', (db) => this.authority.of(db, caller.communityId, caller.pubkey));
    if (authority !== 'owner' && authority !== 'admin') throw refusalError(MODERATION_REFUSALS.moderatorRequired);
    return caller.communityId;
  }
}

function limitOf(raw: string | undefined): number {
  if (raw === undefined) return DEFAULT_LIMIT;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > LISTING_MAX) throw new HttpError(400, `invalid limit: expect 1-${LISTING_MAX}`);
  return n;
}

function unix(d: Date | null): number | null {
  return d === null ? null : Math.floor(d.getTime() / 1000);
}
