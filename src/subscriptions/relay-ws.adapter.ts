/**
 * The ws adapter on the HTTP port, with five changes: a browser page from an origin
 * BUZZ_CORS_ORIGINS does not list is refused with a plain-text 403 (WebSockets have no
 * CORS, so the relay checks `Origin` itself; clients that send none are not affected),
 * the tenant is bound before the upgrade completes (an unknown host gets a plain-text 404; a
 * failed lookup a retryable 503, since a 404 would tell the client its community does not exist),
 * the connection limits are applied before it completes too (ConnectionAdmission: a plain-text
 * 429 for an address over its limit, 503 for a full pod, both with `Retry-After`),
 * admitted upgrades complete in turns (below), and Nest's `{event,data}` message binding is off
 * because the gateway parses NIP-01 frames itself (the default binding silently drops anything
 * else).
 *
 * Turns: completing an upgrade (the 101 answer, the WebSocket, the gateway's connection and its
 * AUTH challenge) costs the event loop a fraction of a millisecond, and in a reconnect storm a
 * thousand upgrade requests are read in one poll of the sockets. Completed there, they would hold
 * the loop for hundreds of milliseconds, and a publisher's EVENT frame would sit unread in its
 * socket that long (docs/adr/0001-writes-through-a-reconnect-storm.md).
 * Admitted upgrades complete in their own OutputTurns queue, a few milliseconds per turn, so
 * the loop reads sockets between turns; what a client receives is unchanged. Upgrades waiting
 * for a turn are bounded: past `maxPendingUpgrades` the relay answers 503 (the client retries).
 */
import { INestApplicationContext } from '@nestjs/common';
import { WsAdapter } from '@nestjs/platform-ws';
import type { IncomingMessage } from 'node:http';
import { CorsPolicy, ORIGIN_NOT_ALLOWED } from '../common/cors-policy.js';
import { Community } from '../tenancy/community.repository.js';
import { INVALID_HOST_MESSAGE, TENANT_LOOKUP_FAILED_MESSAGE, TenancyService, UNKNOWN_HOST_MESSAGE } from '../tenancy/tenancy.service.js';
import { hostHeader } from '../common/host.js';
import { ConnectionAdmission, ConnectionTicket } from './connection-admission.service.js';
import { OutputTurns } from './output-turns.js';
import { WS_REFUSALS } from './ws.refusals.js';

export interface BoundTenant {
  readonly community: Community;
  readonly host: string;
}

const TENANT = Symbol('buzzTenant');
const TICKET = Symbol('buzzConnectionTicket');

type AdmittedRequest = IncomingMessage & { [TENANT]?: BoundTenant; [TICKET]?: ConnectionTicket };

export function tenantOf(req: IncomingMessage): BoundTenant | undefined {
  return (req as AdmittedRequest)[TENANT];
}

/** The connection-limit place the upgrade was given (its address), if the adapter applies the limits. */
export function ticketOf(req: IncomingMessage): ConnectionTicket | undefined {
  return (req as AdmittedRequest)[TICKET];
}

type VerifyCallback = (result: boolean, code?: number, message?: string, headers?: Record<string, string>) => void;

export const UPGRADES_BUSY_MESSAGE = 'relay is busy: too many connections opening, retry later';
export const RELAY_FULL_MESSAGE = 'relay is full: too many connections, retry later';
const PLAIN_TEXT = { 'Content-Type': 'text/plain' };
/** Seconds a refused client is asked to wait: an address over its limit, and a full pod. */
export const RETRY_AFTER_ADDRESS_SECS = 10;
export const RETRY_AFTER_FULL_SECS = 5;
/** A failed tenant lookup: retry soon. */
export const RETRY_AFTER_LOOKUP_FAILED_SECS = 1;

export interface RelayWsAdapterOptions {
  readonly maxFrameBytes: number;
  readonly cors: CorsPolicy;
  /** Admitted upgrades waiting for their turn before the next is answered 503 (the connection cap). */
  readonly maxPendingUpgrades: number;
  /** The upgrades' own queue (tests pass one with a fake clock). */
  readonly upgradeTurns?: OutputTurns;
  /** Counts each refusal by reason (buzz_ws_upgrades_refused_total). */
  readonly refused?: { inc(labels: { reason: UpgradeRefusal }): void };
  /** The connection limits (per address, the global cap and its reserve); absent = none applied here. */
  readonly connections?: ConnectionAdmission;
  /** BUZZ_MAX_CONNECTIONS_PER_IP, named in the 429's text. */
  readonly maxConnectionsPerIp?: number;
}

/** Why an upgrade was answered with an HTTP error: 403, 400 or 404, 503 (busy, capacity; unavailable: the tenant lookup failed), 429 (ip_limit). */
export type UpgradeRefusal = 'origin' | 'unknown_host' | 'busy' | 'capacity' | 'ip_limit' | 'unavailable';

export class RelayWsAdapter extends WsAdapter {
  private readonly upgradeTurns: OutputTurns;

  constructor(
    app: INestApplicationContext,
    private readonly tenancy: TenancyService,
    private readonly options: RelayWsAdapterOptions,
  ) {
    super(app);
    this.upgradeTurns = options.upgradeTurns ?? new OutputTurns();
  }

  override create(port: number, options: Record<string, unknown> = {}) {
    return super.create(port, {
      ...options,
      // Frames up to 4x the cap are read so the client gets a NOTICE naming the
      // size; anything larger is cut off by ws itself (close 1009), bounding memory.
      maxPayload: this.options.maxFrameBytes * 4,
      perMessageDeflate: false,
      verifyClient: (info: { req: IncomingMessage }, done: VerifyCallback) => void this.admitUpgrade(info.req, done),
    });
  }

  override bindMessageHandlers(): void {
    // The gateway reads frames itself.
  }

  /** Upgrades admitted and waiting for their turn to complete. */
  get pendingUpgrades(): number {
    return this.upgradeTurns.waiting;
  }

  /** ws's verifyClient: refusals are answered at once, an admitted upgrade completes in a turn. */
  async admitUpgrade(req: IncomingMessage, done: VerifyCallback): Promise<void> {
    if (!this.options.cors.allows(req.headers.origin)) return this.refuse(done, 'origin', 403, ORIGIN_NOT_ALLOWED);
    const resolution = await this.tenancy.resolve(hostHeader(req.rawHeaders));
    if (!resolution.ok && resolution.reason === 'lookup_failed') return this.refuse(done, 'unavailable', 503, TENANT_LOOKUP_FAILED_MESSAGE, RETRY_AFTER_LOOKUP_FAILED_SECS);
    if (!resolution.ok) return this.refuse(done, 'unknown_host', resolution.reason === 'invalid_host' ? 400 : 404, resolution.reason === 'invalid_host' ? INVALID_HOST_MESSAGE : UNKNOWN_HOST_MESSAGE);
    if (resolution.community.archived) return this.refuse(done, 'unknown_host', 404, UNKNOWN_HOST_MESSAGE);
    if (this.upgradeTurns.waiting >= this.options.maxPendingUpgrades) return this.refuse(done, 'busy', 503, UPGRADES_BUSY_MESSAGE);
    if (!this.takePlace(req, done)) return;
    (req as AdmittedRequest)[TENANT] = { community: resolution.community, host: resolution.host };
    // ws completes the upgrade inside `done`; a socket that closed while it waited is destroyed there.
    await this.upgradeTurns.run(() => done(true));
  }

  /** The connection limits: a place held until the socket closes, or the refusal answered. */
  private takePlace(req: IncomingMessage, done: VerifyCallback): boolean {
    const connections = this.options.connections;
    if (connections === undefined) return true;
    const ticket = connections.admit(connections.addressOf(req));
    if (ticket === 'ip_limit') {
      this.refuse(done, 'ip_limit', 429, WS_REFUSALS.connectionsFromAddress(this.options.maxConnectionsPerIp ?? 0).wire, RETRY_AFTER_ADDRESS_SECS);
      return false;
    }
    if (ticket === 'capacity') {
      this.refuse(done, 'capacity', 503, RELAY_FULL_MESSAGE, RETRY_AFTER_FULL_SECS);
      return false;
    }
    (req as AdmittedRequest)[TICKET] = ticket;
    // The same TCP socket carries the WebSocket: its close frees the place, whether the upgrade
    // completed or the client left while it waited for its turn.
    req.socket.once('close', () => ticket.release());
    if (req.socket.destroyed) ticket.release();
    return true;
  }

  private refuse(done: VerifyCallback, reason: UpgradeRefusal, status: number, message: string, retryAfterSecs?: number): void {
    this.options.refused?.inc({ reason });
    done(false, status, message, retryAfterSecs === undefined ? PLAIN_TEXT : { ...PLAIN_TEXT, 'Retry-After': String(retryAfterSecs) });
  }
}
