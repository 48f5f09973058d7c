/**
 * The HTTP bridge reads: `POST /query` and `POST /count`. Bodies arrive as raw text
 * (NIP-98 hashes the exact bytes); BridgeAdmission binds the tenant, authenticates and
 * applies the quota, the ban and the relay-membership gates; this controller parses the
 * filters and hands off. Failures are thrown and mapped to status and body by
 * HttpErrorFilter.
 */
import { Body, Controller, HttpCode, Post, Req, Res } from '@nestjs/common';
import type { ServerResponse } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ReadAccessService } from '../channels/read-access.service.js';
import { HttpError } from '../common/http-error.js';
import { NostrEvent, NostrFilter } from '../nostr/nostr.types.js';
import { annotateRequest } from '../common/request-annotations.js';
import { CountService, CountTooBroadError, COUNT_TOO_BROAD_MESSAGE } from '../events/count.service.js';
import { BridgeAdmission } from './bridge-admission.service.js';
import { parseBridgeFilters } from './bridge-filters.js';
import { BridgeQueryService } from './bridge-query.service.js';
import { BridgeReader } from './query-rows.js';
import { QueryAnswerMemory } from './query-answer-memory.js';
import { refusalError } from './refusal-status.js';

@Controller()
export class BridgeController {
  constructor(
    private readonly admission: BridgeAdmission,
    private readonly bridge: BridgeQueryService,
    private readonly access: ReadAccessService,
    private readonly counts: CountService,
    private readonly answers: QueryAnswerMemory,
  ) {}

  @Post('query')
  @HttpCode(200)
  async query(@Req() req: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply, @Body() body: unknown): Promise<NostrEvent[]> {
    const signal = clientGone(reply.raw);
    const { reader, filters } = await this.bind(req, body, true);
    // The answer's rows stay in the history memory pool until the response is written out (or the client is gone).
    const answer = this.answers.lease(reader.pubkey);
    if (answer) reply.raw.once('close', () => answer.end());
    const events = await this.bridge.query({ ...reader, signal }, filters, answer);
    annotateRequest(req, { result_count: events.length });
    return events;
  }

  @Post('count')
  @HttpCode(200)
  async count(@Req() req: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply, @Body() body: unknown): Promise<{ count: number }> {
    const signal = clientGone(reply.raw);
    const { reader, filters } = await this.bind(req, body, false);
    const gate = this.access.gate(filters, reader.pubkey, 'count');
    if (gate) throw refusalError(gate.reason);
    let total = 0;
    for (const f of filters) {
      const scope = await this.access.filterScope(reader.communityId, reader.pubkey, f);
      if (scope) total += await this.counts.count(scope, [f], { path: 'bridge_count', reader: reader.pubkey, signal }).catch(tooBroadIs400);
    }
    annotateRequest(req, { result_count: total });
    return { count: total };
  }

  private async bind(req: FastifyRequest, body: unknown, extensions: boolean): Promise<{ reader: BridgeReader; filters: NostrFilter[] }> {
    const rawBody = typeof body === 'string' ? body : '';
    const { communityId, pubkey } = await this.admission.admit(req, rawBody, 'read');
    return { reader: { communityId, pubkey }, filters: parseBridgeFilters(rawBody, extensions) };
  }
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
