/**
 * REQ, COUNT and CLOSE. A REQ claims its id (replacing a same-id predecessor),
 * registers for live delivery, then streams history; every frame it emits is
 * fenced on the owner token, so a superseded request says nothing. A history
 * read that fails ends with CLOSED (never EOSE), so a partial result never reads
 * as complete. JavaScript's run-to-completion makes each claim/retire+frame step
 * atomic for the connection: that is the lifecycle lock.
 */
import { Injectable } from '@nestjs/common';
import { NostrFilter } from '../nostr/nostr.types.js';
import { PoolTimeoutError } from '@buzz-relay/read-path';
import { MemoryRefusedError } from '../memory/memory-budget.js';
import { MEMORY_REFUSALS } from '../memory/memory.refusals.js';
import { effectiveLimit, matchFilter } from '../nostr/filter.js';
import { channelDecidesH } from '../events/event-read.queries.js';
import { SearchService } from '../events/search.service.js';
import { CountService, CountTooBroadError } from '../events/count.service.js';
import { EventQueryService } from '../events/event-query.service.js';
import { ReadScope } from '../channels/read-scope.js';
import { eventVisibleToReader } from '../events/visibility.js';
import { RelayMetrics } from '../metrics/relay-metrics.service.js';
import { AUTH_REFUSALS } from './auth.refusals.js';
import { HandlerGate, handlerRefusal } from './handler-gate.js';
import { pageTarget, sendPageEose, sendPageTurn } from './history-page.js';
import { OutputTurns } from './output-turns.js';
import { ReadAdmission } from './read-admission.service.js';
import { RelayConnection } from './relay-connection.js';
import { closedFrame, closedReason, noticeFrame } from './ws-reasons.js';
import { WS_REFUSALS } from './ws.refusals.js';
import type { Refusal } from '../nostr/refusal.js';

export const MAX_SUBSCRIPTIONS = 1024;
export const SEARCH_PAGE_SIZE = 100;
export const SEARCH_MAX_PAGES = 10;

@Injectable()
export class ReqHandler {
  constructor(
    private readonly queries: EventQueryService,
    private readonly counts: CountService,
    private readonly search: SearchService,
    private readonly gate: HandlerGate,
    private readonly metrics: RelayMetrics,
    private readonly admission: ReadAdmission,
    private readonly turns: OutputTurns,
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
    if (conn.authState !== 'authenticated') return this.refuseUnauthenticated(conn, 'REQ', subId);
    if (!conn.subscriptions.has(subId) && conn.subscriptions.size >= MAX_SUBSCRIPTIONS) {
      conn.send(closedFrame(subId, WS_REFUSALS.tooManySubscriptions));
      return;
    }
    const scope = await this.admission.admit(conn, subId, filters, 'REQ');
    if (!scope) return;
    if (filters.some((f) => f.search !== undefined)) {
      if (!filters.every((f) => f.search !== undefined)) {
        conn.send(closedFrame(subId, WS_REFUSALS.mixedSearch));
        return;
      }
      const searchBytes = this.reserveFilters(conn, subId, filters);
      if (searchBytes === undefined) return;
      const searchToken = conn.claim(subId, filters, scope, false, reqSeq, searchBytes);
      if (searchToken === undefined) return;
      const ran = await this.gate.runRead(() => this.streamSearch(conn, subId, searchToken, filters, scope), conn.pubkey, 'wait');
      if (!ran.admitted) this.closeIfOwner(conn, subId, searchToken, handlerRefusal(ran.refusal));
      return;
    }
    const filterBytes = this.reserveFilters(conn, subId, filters);
    if (filterBytes === undefined) return;
    const token = conn.claim(subId, filters, scope, true, reqSeq, filterBytes);
    if (token === undefined) return;
    const run = await this.gate.runRead(() => this.streamHistory(conn, subId, token, filters, scope), conn.pubkey, 'wait');
    if (!run.admitted) this.closeIfOwner(conn, subId, token, handlerRefusal(run.refusal));
  }

  async handleCount(conn: RelayConnection, subId: string, filters: NostrFilter[]): Promise<void> {
    await conn.pendingAuth;
    if (conn.authState !== 'authenticated') return this.refuseUnauthenticated(conn, 'COUNT', subId);
    const scope = await this.admission.admit(conn, subId, filters, 'COUNT');
    if (!scope) return;
    try {
      const run = await this.gate.runRead(() => this.counts.count(scope, filters, { path: 'count_req', reader: conn.pubkey!, signal: conn.readSignal }), conn.pubkey);
      if (!run.admitted) conn.send(closedFrame(subId, handlerRefusal(run.refusal)));
      else conn.send(['COUNT', subId, { count: run.value }]);
    } catch (err) {
      if (err instanceof CountTooBroadError) {
        conn.send(closedFrame(subId, WS_REFUSALS.countTooBroad));
        return;
      }
      logReadFailure(conn, { connId: conn.id, err }, 'COUNT query failed');
      conn.send(closedFrame(subId, closedReason(err)));
    }
  }

  /** The answer to a REQ or COUNT from a connection that is not authenticated. */
  refuseUnauthenticated(conn: RelayConnection, verb: 'REQ' | 'COUNT', subId: string): void {
    if (verb === 'REQ') conn.send(noticeFrame(AUTH_REFUSALS.authenticateFirst));
    conn.send(closedFrame(subId, AUTH_REFUSALS.notAuthenticated));
  }

  /** Retires whatever holds the id, even an unknown one, then acknowledges. */
  handleClose(conn: RelayConnection, subId: string): void {
    conn.retire(subId);
    conn.sendClosed(subId);
  }

  /**
   * The filters' memory for the subscription's life, from the key's share of the process's
   * `filters` pool (src/memory): the bytes to claim with, or undefined once refused with CLOSED.
   * A refused REQ leaves an existing same-id subscription alone, like every admission refusal.
   */
  private reserveFilters(conn: RelayConnection, subId: string, filters: NostrFilter[]): number | undefined {
    const reserved = conn.reserveFilters(filters);
    if (typeof reserved === 'number') return reserved;
    conn.send(closedFrame(subId, reserved === 'key' ? MEMORY_REFUSALS.filterShare : MEMORY_REFUSALS.poolFull));
    return undefined;
  }

  private async streamHistory(conn: RelayConnection, subId: string, token: number, filters: NostrFilter[], scope: ReadScope): Promise<void> {
    const started = process.hrtime.bigint();
    const target = pageTarget(conn, subId, token);
    // Output that does not fit ends the subscription (CLOSED, no EOSE) and stops the read:
    // leaving the loop closes the cursor, so nothing more is fetched or encoded.
    if (!conn.hasOutputRoom()) return conn.shedSubscription(subId, token);
    let eose = false;
    try {
      // One batch per filter (or per memory lease of a large page). The page goes out in turns
      // (OutputTurns), EOSE in the last one, so a storm's pages do not hold the event loop.
      for await (const { events: batch, last } of this.queries.history(scope, filters, true, { path: 'req_historical', reader: conn.pubkey, signal: conn.readSignal, outputBacklogged: () => conn.outputBacklogged() })) {
        for (let at = 0; at < batch.length || (last && !eose); ) {
          const step = await this.turns.run(() => sendPageTurn(target, batch, at, last));
          if (step.stop === 'gone') return;
          if (step.stop === 'full') return conn.shedSubscription(subId, token);
          at = step.next;
          eose = step.eose === true;
          // Over budget, nothing more is encoded until the client drains its output; a client
          // that stopped reading loses the subscription instead.
          if (step.waitBytes !== undefined && !(await conn.waitForRoom(step.waitBytes))) return conn.shedSubscription(subId, token);
        }
      }
    } catch (err) {
      logReadFailure(conn, { connId: conn.id, subId, err }, 'Historical query failed');
      this.closeIfOwner(conn, subId, token, closedReason(err));
      return;
    }
    if (!eose && conn.owns(subId, token) && sendPageEose(target) === 'full') conn.shedSubscription(subId, token);
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
        // The match already kept a channel-scoped `#h` to its channels (SearchRepository).
        const hDecided = channelDecidesH(scope, f) ? 'h-decided' : undefined;
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
            if (emitted >= limit || seen.has(ev.id) || !matchFilter(ev, plain, hDecided) || !eventVisibleToReader(ev, conn.pubkey!)) continue;
            if (!conn.owns(subId, token)) return;
            seen.add(ev.id);
            const result = conn.send(['EVENT', subId, ev]);
            if (result === 'full') return conn.shedSubscription(subId, token);
            if (result === 'closed') return;
            emitted += 1;
          }
          if (rows.length < SEARCH_PAGE_SIZE) break;
        }
      }
    } catch (err) {
      logReadFailure(conn, { connId: conn.id, subId, err }, 'search query failed');
      this.closeIfOwner(conn, subId, token, closedReason(err));
      return;
    }
    if (conn.owns(subId, token) && conn.sendEose(subId) === 'full') return conn.shedSubscription(subId, token);
    conn.retireIfOwner(subId, token);
  }

  /**
   * Owner-checked close: silent when superseded; otherwise retire and queue the
   * terminal frame in the same step. A terminal frame that cannot be queued
   * disconnects the client (sendClosed) rather than leave a subscription that
   * will never receive fan-out.
   */
  private closeIfOwner(conn: RelayConnection, subId: string, token: number, refusal: Refusal): void {
    if (!conn.retireIfOwner(subId, token)) return;
    conn.sendClosed(subId, refusal);
  }
}

/**
 * A read refused for capacity (shed, the writer-read cap, no connection in time, memory) is logged at
 * debug: it is counted (`buzz_db_route_decision`, the pool's acquire outcomes) and answered, and a
 * flood of refused reads must not become a flood of warn lines written synchronously to stdout.
 * Any other failure is a warn.
 */
function logReadFailure(conn: RelayConnection, fields: Record<string, unknown>, message: string): void {
  if (fields.err instanceof PoolTimeoutError || fields.err instanceof MemoryRefusedError) conn.log.debug(fields, message);
  else conn.log.warn(fields, message);
}
