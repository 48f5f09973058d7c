/**
 * `POST /events` (relay.md §3.2): one signed event, published over HTTP through the same ingest
 * pipeline as a WebSocket EVENT, after the common admission of §3.1 (tenant, NIP-98 bound to the
 * body by its `payload` tag, quotas, replay, bans, relay membership). The answer is the `OK` of
 * the WebSocket as JSON: 200 `{"event_id","accepted","message"}` when stored (or already stored),
 * otherwise `{"error": <reason>}` with the status of its refusal's code (ingestStatus).
 */
import { Body, Controller, HttpCode, Post, Req } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { HttpError } from '../common/http-error.js';
import { annotateRequest } from '../common/request-annotations.js';
import { INGEST_REFUSALS } from '../events/ingest.refusals.js';
import { IngestService } from '../events/ingest.service.js';
import { RelayMetrics } from '../metrics/relay-metrics.service.js';
import { BridgeAdmission } from './bridge-admission.service.js';
import { ingestStatus, refusalError } from './refusal-status.js';

export interface EventAck {
  readonly event_id: string;
  readonly accepted: boolean;
  readonly message: string;
}

@Controller()
export class EventsController {
  constructor(
    private readonly admission: BridgeAdmission,
    private readonly ingest: IngestService,
    private readonly metrics: RelayMetrics,
  ) {}

  @Post('events')
  @HttpCode(200)
  async publish(@Req() req: FastifyRequest, @Body() body: unknown): Promise<EventAck> {
    const rawBody = typeof body === 'string' ? body : '';
    const caller = await this.admission.admit(req, rawBody, 'write');
    const event = this.parse(rawBody);
    // Identity (relay.md §5.2 step 5): the signer of the request publishes as itself only.
    // Gift wraps, the one exemption, are WebSocket-only and refused by ingest.
    const kind = (event as { kind?: unknown } | null)?.kind;
    if ((event as { pubkey?: unknown } | null)?.pubkey !== caller.pubkey && kind !== 1059) this.refuse(refusalError(INGEST_REFUSALS.pubkeyMismatch));
    const result = await this.ingest.ingest(event, { communityId: caller.communityId, transport: 'http', author: caller.pubkey }).catch((err: unknown) => {
      this.metrics.eventsRejected.inc({ transport: 'http', reason: 'error' });
      throw err;
    });
    if (typeof kind === 'number') annotateRequest(req, { kind });
    const status = ingestStatus(result);
    if (status !== 200) throw new HttpError(status, result.message);
    annotateRequest(req, { accepted: result.accepted });
    return { event_id: result.eventId ?? '', accepted: result.accepted, message: result.message };
  }

  private parse(rawBody: string): unknown {
    let body: unknown;
    try {
      body = JSON.parse(rawBody);
    } catch (e) {
      return this.refuse(new HttpError(400, `invalid event JSON: ${(e as Error).message}`));
    }
    // One event per request: an array (the WebSocket frame's shape) or any other value is said as such.
    if (typeof body !== 'object' || body === null || Array.isArray(body)) return this.refuse(refusalError(INGEST_REFUSALS.bodyNotOneEvent));
    return body;
  }

  /** A refusal decided before ingest (each a 400), counted like ingest's own. */
  private refuse(err: HttpError): never {
    this.metrics.eventsRejected.inc({ transport: 'http', reason: 'invalid' });
    throw err;
  }
}
