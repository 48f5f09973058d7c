/**
 * REQ, COUNT and CLOSE. A REQ claims its id (replacing a same-id predecessor),
 * registers for live delivery, then streams history; every frame it emits is
 * fenced on the owner token, so a superseded request says nothing. A history
 * read that fails ends with CLOSED (never EOSE), so a partial result never reads
 * as complete. JavaScript's run-to-completion makes each claim/retire+frame step
 * atomic for the connection: that is the lifecycle lock.
 */
import { Injectable } from '@nestjs/common';
import { NostrFilter } from '../common/nostr.types.js';
import { closedReasonFor } from '../database/pg-errors.js';
import { ReadAccessService } from '../channels/read-access.service.js';
import { effectiveLimit, matchFilter } from '../events/filter.js';
import { SearchService } from '../events/search.service.js';
import { CountService, CountTooBroadError, COUNT_TOO_BROAD_MESSAGE } from '../events/count.service.js';
import { EventQueryService } from '../events/event-query.service.js';
import { ReadScope } from '../events/read-scope.js';
import { eventJson } from '../events/stored-event.js';
import { eventVisibleToReader } from '../events/visibility.js';
import { RelayMetrics } from '../metrics/relay-metrics.service.js';
import { RateLimitService } from '../ratelimit/rate-limit.service.js';
import { HandlerGate, TOO_MANY_CONCURRENT } from './handler-gate.js';
import { RelayConnection } from './relay-connection.js';

export const MAX_SUBSCRIPTIONS = 1024;
export const SEARCH_PAGE_SIZE = 100;
export const SEARCH_MAX_PAGES = 10;
const YIELD_EVERY = 100;

@Injectable()
export class ReqHandler {
  constructor(
    private readonly queries: EventQueryService,
    private readonly counts: CountService,
    private readonly readAccess: ReadAccessService,
    private readonly search: SearchService,
    private readonly gate: HandlerGate,
    private readonly metrics: RelayMetrics,
    private readonly limits: RateLimitService,
  ) {}

  async handleReq(conn: RelayConnection, subId: string, filters: NostrFilter[], reqSeq: number): Promise<void> {
    try {
      await this.runReq(conn, subId, filters, reqSeq);
    } finally {
      conn.abandonReq(subId, reqSeq);
    }
  }

  private async runReq(conn: RelayConnection, subId: string, filters: NostrFilter[], reqSeq: number): Promise<void> {
    await conn.pendingAuth;
    if (conn.authState !== 'authenticated') {
      conn.send(['NOTICE', 'auth-required: authenticate before subscribing']);
      conn.send(['CLOSED', subId, 'auth-required: not authenticated']);
      return;
    }
    if (!conn.subscriptions.has(subId) && conn.subscriptions.size >= MAX_SUBSCRIPTIONS) {
      conn.send(['CLOSED', subId, 'error: too many subscriptions']);
      return;
    }
    const scope = await this.admit(conn, subId, filters, 'REQ');
    if (!scope) return;
    if (filters.some((f) => f.search !== undefined)) {
      if (!filters.every((f) => f.search !== undefined)) {
        conn.send(['CLOSED', subId, 'error: mixed search and non-search filters not supported']);
        return;
      }
      const searchToken = conn.claim(subId, filters, scope, false, reqSeq);
      if (searchToken === undefined) return;
      const ran = await this.gate.run(() => this.streamSearch(conn, subId, searchToken, filters, scope));
      if (!ran.admitted) this.closeIfOwner(conn, subId, searchToken, TOO_MANY_CONCURRENT);
      return;
    }
    const token = conn.claim(subId, filters, scope, true, reqSeq);
    if (token === undefined) return;
    const run = await this.gate.run(() => this.streamHistory(conn, subId, token, filters, scope));
    if (!run.admitted) this.closeIfOwner(conn, subId, token, TOO_MANY_CONCURRENT);
  }

  async handleCount(conn: RelayConnection, subId: string, filters: NostrFilter[]): Promise<void> {
    await conn.pendingAuth;
    if (conn.authState !== 'authenticated') {
      conn.send(['CLOSED', subId, 'auth-required: not authenticated']);
      return;
    }
    const scope = await this.admit(conn, subId, filters, 'COUNT');
    if (!scope) return;
    try {
      const run = await this.gate.run(() => this.counts.count(scope, filters, { path: 'count_req', reader: conn.pubkey! }));
      if (!run.admitted) conn.send(['CLOSED', subId, TOO_MANY_CONCURRENT]);
      else conn.send(['COUNT', subId, { count: run.value }]);
    } catch (err) {
      if (err instanceof CountTooBroadError) {
        conn.send(['CLOSED', subId, `restricted: ${COUNT_TOO_BROAD_MESSAGE}`]);
        return;
      }
      conn.log.warn({ connId: conn.id, err: (err as Error).message }, 'COUNT query failed');
      conn.send(['CLOSED', subId, closedReasonFor(err)]);
    }
  }

  /** Retires whatever holds the id, even an unknown one, then acknowledges. */
  handleClose(conn: RelayConnection, subId: string): void {
    conn.retire(subId);
    conn.send(['CLOSED', subId, '']);
  }

  /**
   * Quota, then access and gates, before anything is claimed: a refused REQ
   * leaves an existing same-id subscription alone. Refusals are sub-scoped CLOSED.
   */
  private async admit(conn: RelayConnection, subId: string, filters: NostrFilter[], verb: 'REQ' | 'COUNT'): Promise<ReadScope | undefined> {
    const quota = await this.limits.ws(conn.communityId, conn.pubkey!, verb);
    if (!quota.allowed) {
      conn.send(['CLOSED', subId, quota.reason]);
      return undefined;
    }
    try {
      const decision = await this.readAccess.scopeFor(conn.communityId, conn.pubkey!, filters, verb === 'REQ' ? 'req' : 'count');
      if (decision.ok) return decision.scope;
      conn.send(['CLOSED', subId, decision.reason]);
    } catch (err) {
      conn.log.warn({ connId: conn.id, err: (err as Error).message }, 'channel access lookup failed');
      conn.send(['CLOSED', subId, 'error: database error']);
    }
    return undefined;
  }

  private async streamHistory(conn: RelayConnection, subId: string, token: number, filters: NostrFilter[], scope: ReadScope): Promise<void> {
    const started = process.hrtime.bigint();
    const prefix = `["EVENT",${JSON.stringify(subId)},`;
    let sent = 0;
    try {
      for await (const batch of this.queries.history(scope, filters, true, { path: 'req_historical', reader: conn.pubkey })) {
        for (const ev of batch) {
          if (!eventVisibleToReader(ev, conn.pubkey!)) continue;
          if (!conn.owns(subId, token)) return;
          if (conn.sendRaw(prefix + eventJson(ev) + ']') !== 'sent') return;
          if (++sent % YIELD_EVERY === 0) await new Promise((r) => setImmediate(r));
        }
      }
    } catch (err) {
      conn.log.warn({ connId: conn.id, subId, err: (err as Error).message }, 'Historical query failed');
      this.closeIfOwner(conn, subId, token, closedReasonFor(err));
      return;
    }
    if (conn.owns(subId, token)) conn.send(['EOSE', subId]);
    this.metrics.reqDuration.observe(Number(process.hrtime.bigint() - started) / 1e9);
  }

  /**
   * NIP-50: one-shot. Pages of 100 hits (at most 10) per filter until its limit
   * is met, de-duplicated across filters; EOSE, then the claim is dropped.
   */
  private async streamSearch(conn: RelayConnection, subId: string, token: number, filters: NostrFilter[], scope: ReadScope): Promise<void> {
    const seen = new Set<string>();
    try {
      for (const f of filters) {
        const limit = effectiveLimit(f);
        const { search, ...plain } = f;
        let emitted = 0;
        for (let page = 0; page < SEARCH_MAX_PAGES && emitted < limit; page++) {
          const rows = await this.search.search(scope, {
            text: search ?? '',
            prefix: false,
            filter: f,
            limit: SEARCH_PAGE_SIZE,
            offset: page * SEARCH_PAGE_SIZE,
            path: 'req_search_hydrate',
            reader: conn.pubkey!,
          });
          for (const ev of rows) {
            if (emitted >= limit || seen.has(ev.id) || !matchFilter(ev, plain) || !eventVisibleToReader(ev, conn.pubkey!)) continue;
            if (!conn.owns(subId, token)) return;
            seen.add(ev.id);
            conn.send(['EVENT', subId, ev]);
            emitted += 1;
          }
          if (rows.length < SEARCH_PAGE_SIZE) break;
        }
      }
    } catch (err) {
      conn.log.warn({ connId: conn.id, subId, err: (err as Error).message }, 'search query failed');
      this.closeIfOwner(conn, subId, token, closedReasonFor(err));
      return;
    }
    if (conn.owns(subId, token)) conn.send(['EOSE', subId]);
    conn.retireIfOwner(subId, token);
  }

  /**
   * Owner-checked close: silent when superseded; otherwise retire and queue the
   * terminal frame in the same step. A terminal frame that cannot be queued
   * cancels the connection rather than leave a subscription that will never
   * receive fan-out.
   */
  private closeIfOwner(conn: RelayConnection, subId: string, token: number, reason: string): void {
    if (!conn.retireIfOwner(subId, token)) return;
    if (conn.send(['CLOSED', subId, reason]) !== 'sent') conn.cancel();
  }
}
