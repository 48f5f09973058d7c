/**
 * The NIP-01 WebSocket endpoint. Thin: it owns the connection lifecycle (AUTH
 * challenge, ping/pong, frame-size gate, input pacing, teardown) and hands each parsed frame to
 * FrameRouter, which holds what a client sends before its AUTH has an outcome.
 */
import { Inject, OnModuleDestroy } from '@nestjs/common';
import { OnGatewayConnection, WebSocketGateway } from '@nestjs/websockets';
import type { IncomingMessage } from 'node:http';
import { PinoLogger } from 'nestjs-pino';
import { RawData, WebSocket } from 'ws';
import type { AppConfig } from '../config/app-config.js';
import { APP_CONFIG } from '../config/config.tokens.js';
import { parseClientMessage } from '../nostr/client-message.js';
import { LifecycleState } from '../health/lifecycle-state.js';
import { MemoryBudget } from '../memory/memory-budget.js';
import { RelayMetrics } from '../metrics/relay-metrics.service.js';
import { AUTH_REFUSALS } from './auth.refusals.js';
import { ConnectionAdmission } from './connection-admission.service.js';
import { FrameRouter } from './frame-router.js';
import { InputPacing } from './input-pacing.js';
import { LiveFanout } from './live-fanout.service.js';
import { OutputBudget } from './output-budget.js';
import { PreAuthInput } from './preauth-input.js';
import { OutputEvents, RelayConnection } from './relay-connection.js';
import { tenantOf, ticketOf } from './relay-ws.adapter.js';
import { noticeFrame } from './ws-reasons.js';
import { WS_REFUSALS } from './ws.refusals.js';

export const PING_INTERVAL_MS = 30_000;
export const MAX_MISSED_PONGS = 3;
export const AUTH_DEADLINE_MS = 5_000;
/**
 * Up to this much is added to each connection's AUTH deadline at random: clients that connected
 * together and never authenticate (a flood, or a crowd with a broken signer) are not all closed in
 * the same timer run, and do not all reconnect, and upgrade, in the same instant.
 */
export const AUTH_DEADLINE_SPREAD_MS = 1_000;
/** The close of a connection not authenticated by the AUTH deadline (AUTH_REFUSALS.deadline): a client learns why it was dropped. */
export const AUTH_TIMEOUT_CLOSE_CODE = 1008;

@WebSocketGateway()
export class RelayGateway implements OnGatewayConnection, OnModuleDestroy {
  private readonly connections = new Set<RelayConnection>();
  private readonly pinger: NodeJS.Timeout;
  private readonly outputBudget: OutputBudget;
  private readonly outputEvents: OutputEvents;
  private readonly inputPacing: InputPacing;
  private readonly preAuthInput: PreAuthInput;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly logger: PinoLogger,
    private readonly metrics: RelayMetrics,
    private readonly fanout: LiveFanout,
    private readonly frames: FrameRouter,
    private readonly admission: ConnectionAdmission,
    private readonly memory: MemoryBudget,
    lifecycle: LifecycleState,
  ) {
    this.logger.setContext('RelayGateway');
    this.inputPacing = new InputPacing({ maxFrameBytes: config.limits.maxFrameBytes, draining: () => lifecycle.draining, paced: metrics.wsInputPaced });
    this.preAuthInput = new PreAuthInput({
      bytesPerSecond: config.limits.preauthInputBytesPerIp,
      draining: () => lifecycle.draining,
      paced: metrics.wsPreauthPaced,
      waiting: metrics.wsPreauthWaiting,
    });
    this.outputBudget = new OutputBudget(config.limits.sendBufferTotalBytes, metrics.wsOutputQueuedBytes, memory.pool('output'));
    this.outputEvents = {
      slowClientDisconnected: (c) => {
        this.metrics.wsBackpressureDisconnects.inc();
        this.logger.debug({ connId: c.id, queuedBytes: c.queuedBytes }, 'slow consumer disconnected');
      },
      subscriptionShed: () => this.metrics.wsSlowConsumerCloses.inc(),
    };
    this.pinger = setInterval(() => this.heartbeat(), PING_INTERVAL_MS);
    this.pinger.unref();
  }

  handleConnection(ws: WebSocket, req: IncomingMessage): void {
    const tenant = tenantOf(req);
    if (!tenant) return void ws.terminate();
    // The connection limits were applied at the upgrade (RelayWsAdapter, ConnectionAdmission):
    // a connection that reaches here has its place, and gets its challenge.
    const conn = this.open(ws, tenant.community.id, tenant.host);
    const address = ticketOf(req)?.address ?? req.socket.remoteAddress ?? '';
    this.preAuthInput.opened(conn, address);
    this.logger.debug({ connId: conn.id, addr: address }, 'WebSocket connection established');
    ws.on('message', (data, isBinary) => this.onFrame(conn, data, isBinary));
    ws.on('pong', () => (conn.missedPongs = 0));
    ws.on('close', () => this.teardown(conn));
    ws.on('error', () => conn.cancel());
  }

  /** Graceful drain: tell every client the relay is restarting. */
  closeAll(code = 1012, reason = 'relay restarting'): void {
    for (const conn of this.connections) conn.cancel(code, reason);
  }

  onModuleDestroy(): void {
    clearInterval(this.pinger);
    this.closeAll();
  }

  private open(ws: WebSocket, communityId: string, host: string): RelayConnection {
    const { sendBuffer, slowClientGraceLimit, sendBufferBytes } = this.config.limits;
    const pools = { authHold: this.memory.pool('auth_hold'), filters: this.memory.pool('filters') };
    const limits = { sendBuffer, slowClientGraceLimit, maxQueuedBytes: sendBufferBytes, authHold: this.config.authHold, pools };
    const conn = new RelayConnection(ws, communityId, host, this.logger.logger, limits, this.outputEvents, this.outputBudget);
    this.connections.add(conn);
    this.fanout.add(conn);
    this.metrics.wsConnectionsTotal.inc({ community: communityId });
    this.metrics.wsConnectionsActive.inc();
    this.metrics.authAttempts.inc({ method: 'nip42' });
    conn.send(['AUTH', conn.challenge]);
    const deadline = setTimeout(() => this.authDeadline(conn), AUTH_DEADLINE_MS + Math.random() * AUTH_DEADLINE_SPREAD_MS);
    deadline.unref();
    // Checked after the loop's next poll: an AUTH already received but not yet read (a busy event
    // loop in a reconnect storm) is read first and counts.
    const grace = setTimeout(() => setImmediate(() => this.authGraceOver(conn)), conn.authHold.graceMs);
    grace.unref();
    ws.once('close', () => {
      clearTimeout(deadline);
      clearTimeout(grace);
    });
    return conn;
  }

  /**
   * AUTH_DEADLINE_MS after the challenge. It measures the client: a connection whose AUTH frame
   * arrived in time and is still being verified is left to the relay's own bound
   * (BUZZ_AUTH_VERIFY_TIMEOUT_MS, in AuthHandler), and closed only if that verification fails.
   */
  private authDeadline(conn: RelayConnection): void {
    if (conn.authState === 'authenticated' || conn.isCancelled) return;
    if (conn.authState === 'pending' && conn.authFramesInFlight > 0) {
      void conn.pendingAuth?.then(() => {
        if (conn.authState !== 'authenticated') conn.cancel(AUTH_TIMEOUT_CLOSE_CODE, AUTH_REFUSALS.deadline.wire);
      });
      return;
    }
    this.metrics.wsAuthTimeouts.inc();
    this.metrics.authOutcomes.inc({ method: 'nip42', outcome: 'timeout' });
    this.frames.endHold(conn, true);
    conn.cancel(AUTH_TIMEOUT_CLOSE_CODE, AUTH_REFUSALS.deadline.wire);
  }

  /**
   * BUZZ_AUTH_HOLD_GRACE_MS after the challenge with no AUTH under way: the held frames are refused
   * now, and later ones at once until an AUTH arrives (the connection stays open until the deadline).
   */
  private authGraceOver(conn: RelayConnection): void {
    if (conn.authState !== 'pending' || conn.isCancelled) return;
    conn.authHold.expire();
    if (conn.authFramesInFlight === 0) this.frames.endHold(conn, true);
  }

  private onFrame(conn: RelayConnection, data: RawData, isBinary: boolean): void {
    if (conn.isCancelled) return;
    const buf = Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as ArrayBuffer);
    const max = this.config.limits.maxFrameBytes;
    if (buf.length > max) {
      conn.send(noticeFrame(WS_REFUSALS.frameTooLarge(isBinary, buf.length, max)));
      conn.cancel(1009, 'frame too large');
      return;
    }
    this.inputPacing.read(conn, buf.length);
    const text = isBinary ? decodeUtf8(buf) : buf.toString('utf8');
    if (text === undefined) return;
    const msg = parseClientMessage(text);
    if (msg.type === 'AUTH') return void this.frames.authenticate(conn, msg.event).then(() => this.authOutcome(conn));
    if (conn.authState !== 'authenticated') this.preAuthInput.charge(conn, buf.length);
    // Until AUTH has an outcome, frames wait for it in order (AuthHold); once it has, anything
    // still held goes first.
    if (conn.authState === 'pending') return this.frames.holdOrRefuse(conn, msg, text, buf.length);
    this.frames.endHold(conn);
    this.frames.dispatch(conn, msg);
  }

  /**
   * An AUTH was answered: once authenticated, the address's pre-AUTH budget no longer applies and
   * the fan-out counts the socket for its pubkey; held frames run.
   */
  private authOutcome(conn: RelayConnection): void {
    if (conn.authState === 'authenticated') {
      this.preAuthInput.leave(conn);
      this.fanout.authenticated(conn);
    }
    this.frames.endHold(conn);
  }

  private heartbeat(): void {
    for (const conn of this.connections) {
      if (conn.missedPongs >= MAX_MISSED_PONGS) {
        conn.cancel();
        continue;
      }
      conn.missedPongs += 1;
      try {
        conn.ws.ping();
      } catch {
        conn.cancel();
      }
    }
  }

  private teardown(conn: RelayConnection): void {
    if (!this.connections.delete(conn)) return;
    conn.cancel();
    this.preAuthInput.leave(conn);
    conn.authHold.clear();
    conn.releaseOutput();
    this.fanout.remove(conn);
    this.metrics.wsConnectionsActive.dec();
    if (conn.authState === 'authenticated') {
      this.metrics.wsAuthenticatedActive.dec();
      this.admission.releaseKey(conn.pubkey!);
    }
    this.logger.debug({ connId: conn.id }, 'WebSocket connection closed');
  }
}

/** Binary frames that decode as UTF-8 are treated as text; others are ignored. */
function decodeUtf8(buf: Buffer): string | undefined {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(buf);
  } catch {
    return undefined;
  }
}
