import { Injectable } from '@nestjs/common';
import { IngestService } from '../events/ingest.service.js';
import { INGEST_REFUSALS } from '../events/ingest.refusals.js';
import { rejectionLabel } from '../events/rejection.js';
import { Refusal } from '../nostr/refusal.js';
import { RelayMetrics } from '../metrics/relay-metrics.service.js';
import { RateLimitService } from '../ratelimit/rate-limit.service.js';
import { AUTH_REFUSALS } from './auth.refusals.js';
import { HandlerGate, handlerRefusal } from './handler-gate.js';
import { RelayConnection } from './relay-connection.js';
import { okReason, okRefused } from './ws-reasons.js';

/** WS EVENT: the pre-checks of relay.md §5.1, then the shared ingest pipeline. */
@Injectable()
export class EventHandler {
  constructor(
    private readonly ingest: IngestService,
    private readonly gate: HandlerGate,
    private readonly metrics: RelayMetrics,
    private readonly limits: RateLimitService,
  ) {}

  async handle(conn: RelayConnection, raw: unknown): Promise<void> {
    await conn.pendingAuth;
    const id = eventIdOf(raw);
    const pre = this.preCheck(conn, raw);
    if (pre) {
      this.metrics.eventsRejected.inc({ transport: 'ws', reason: rejectionLabel(pre.code) });
      conn.send(okRefused(id, pre));
      return;
    }
    const quota = await this.limits.ws(conn.communityId, conn.pubkey!, 'EVENT', conn.nipOaOwner === undefined ? 'human' : 'agent');
    if (!quota.allowed) {
      conn.send(okRefused(id, quota.reason));
      return;
    }
    const started = process.hrtime.bigint();
    try {
      const run = await this.gate.run(() => this.ingest.ingest(raw, { communityId: conn.communityId, transport: 'ws', author: conn.pubkey! }));
      if (!run.admitted) {
        conn.send(okRefused(id, handlerRefusal(run.refusal)));
        return;
      }
      const result = run.value;
      conn.send(['OK', result.eventId ?? id, result.accepted, result.message]);
    } catch (err) {
      conn.log.error({ connId: conn.id, eventId: id, err }, 'event ingest failed');
      this.metrics.eventsRejected.inc({ transport: 'ws', reason: 'error' });
      conn.send(okRefused(id, okReason(err)));
    } finally {
      this.metrics.eventProcessing.observe(Number(process.hrtime.bigint() - started) / 1e9);
    }
  }

  /** The answer to an EVENT from a connection that is not authenticated. */
  refuseUnauthenticated(conn: RelayConnection, raw: unknown): void {
    this.metrics.eventsRejected.inc({ transport: 'ws', reason: 'auth' });
    conn.send(okRefused(eventIdOf(raw), AUTH_REFUSALS.notAuthenticated));
  }

  private preCheck(conn: RelayConnection, raw: unknown): Refusal | undefined {
    if (conn.authState !== 'authenticated') return AUTH_REFUSALS.notAuthenticated;
    const ev = raw as { pubkey?: unknown; kind?: unknown };
    if (ev.kind === 22242) return INGEST_REFUSALS.authEventOverEvent;
    if (ev.pubkey !== conn.pubkey && ev.kind !== 1059) return INGEST_REFUSALS.pubkeyMismatch;
    return undefined;
  }
}

function eventIdOf(raw: unknown): string {
  const id = (raw as { id?: unknown } | null)?.id;
  return typeof id === 'string' ? id.slice(0, 64) : '';
}
