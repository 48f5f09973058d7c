/**
 * Each parsed client frame to its verb's handler (AUTH, EVENT, REQ, COUNT, CLOSE), and the frames a
 * client sends before its AUTH has an outcome: held in order while an AUTH may still come, then run
 * once it succeeded or refused once it failed (AuthHold).
 */
import { Injectable } from '@nestjs/common';
import { RelayMetrics } from '../metrics/relay-metrics.service.js';
import { HeldMessage } from './auth-hold.js';
import { AuthHandler } from './auth.handler.js';
import { EventHandler } from './event.handler.js';
import { RelayConnection } from './relay-connection.js';
import { ReqHandler } from './req.handler.js';
import { closedFrame } from './ws-reasons.js';
import { WS_REFUSALS } from './ws.refusals.js';

@Injectable()
export class FrameRouter {
  constructor(
    private readonly auth: AuthHandler,
    private readonly events: EventHandler,
    private readonly reqs: ReqHandler,
    private readonly metrics: RelayMetrics,
  ) {}

  /** An AUTH frame: settles when the AUTH has its outcome. */
  authenticate(conn: RelayConnection, event: unknown): Promise<void> {
    return this.auth.handle(conn, event);
  }

  dispatch(conn: RelayConnection, msg: HeldMessage): void {
    switch (msg.type) {
      case 'INVALID':
        this.metrics.wsNotices.inc({ reason: 'invalid_message' });
        conn.send(['NOTICE', `invalid message: ${msg.error}`]);
        // A REQ or COUNT whose filters were refused also ends that request, and whatever held its
        // id, so the client learns which subscription failed and none is left half-replaced.
        if (msg.subId !== undefined) {
          conn.retire(msg.subId);
          conn.send(closedFrame(msg.subId, WS_REFUSALS.badMessage(msg.error)));
        }
        return;
      case 'EVENT':
        return void this.events.handle(conn, msg.event);
      case 'REQ':
        // A client whose output is full gets no new history to read and encode.
        if (!conn.hasOutputRoom()) return conn.shedSubscription(msg.subId);
        return void this.reqs.handleReq(conn, msg.subId, msg.filters, conn.noteReq(msg.subId));
      case 'COUNT':
        return void this.reqs.handleCount(conn, msg.subId, msg.filters);
      case 'CLOSE':
        return this.reqs.handleClose(conn, msg.subId);
    }
  }

  /**
   * A frame read before AUTH has an outcome: held while an AUTH may still come within the grace or
   * is being verified; otherwise, or past the hold's bounds, answered now.
   */
  holdOrRefuse(conn: RelayConnection, msg: HeldMessage, text: string, bytes: number): void {
    const awaited = !conn.authHold.expired || conn.authFramesInFlight > 0;
    if (awaited && conn.authHold.offer(msg, text, bytes) === 'held') return;
    // Answered ahead of the held frames, so it supersedes held REQs for its id (NIP-01).
    if ((msg.type === 'REQ' || msg.type === 'CLOSE' || msg.type === 'INVALID') && msg.subId !== undefined) conn.authHold.supersede(msg.subId);
    this.refuse(conn, msg);
  }

  /**
   * The held frames once AUTH has an outcome: run in order when it succeeded, refused in order when
   * it failed or the deadline passed (before the socket closes); a closed socket drops them.
   */
  endHold(conn: RelayConnection, refuseAll = false): void {
    if (conn.authHold.size === 0 || (conn.authState === 'pending' && !refuseAll)) return;
    const held = conn.authHold.drain();
    if (conn.isCancelled) return;
    for (const msg of held) {
      if (conn.authState === 'authenticated') this.dispatch(conn, msg);
      else this.refuse(conn, msg);
    }
  }

  /** The usual answer to a frame from a connection that is not authenticated. */
  private refuse(conn: RelayConnection, msg: HeldMessage): void {
    switch (msg.type) {
      case 'EVENT':
        return this.events.refuseUnauthenticated(conn, msg.event);
      case 'REQ':
      case 'COUNT':
        return this.reqs.refuseUnauthenticated(conn, msg.type, msg.subId);
      default:
        // CLOSE and unparsable frames need no authentication.
        return this.dispatch(conn, msg);
    }
  }
}
