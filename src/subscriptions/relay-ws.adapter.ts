/**
 * The ws adapter on the HTTP port, with four changes: a browser page from an origin
 * BUZZ_CORS_ORIGINS does not list is refused with a plain-text 403 (WebSockets have no
 * CORS, so the relay checks `Origin` itself; clients that send none are not affected),
 * the tenant is bound before the upgrade completes (an unknown host gets a plain-text 404),
 * admitted upgrades complete in turns (below), and Nest's `{event,data}` message binding is off
 * because the gateway parses NIP-01 frames itself (the default binding silently drops anything
 * else).
 *
 * Turns (issue 17, event-loop fairness): completing an upgrade (the 101 answer, the WebSocket,
 * the gateway's connection and its AUTH challenge) costs the event loop a fraction of a
 * millisecond, and in a reconnect storm a thousand upgrade requests are read in one poll of the
 * sockets. Completed there, they held the loop for 200 to 290 ms at a time (event-loop delay max
 * of a 1,000-client storm), and a publisher's EVENT frame sat unread in its socket that long.
 * Admitted upgrades now complete in their own OutputTurns queue, a few milliseconds per turn, so
 * the loop reads sockets between turns; what a client receives is unchanged. Upgrades waiting
 * for a turn are bounded: past `maxPendingUpgrades` the relay answers 503 (the client retries).
 */
import { INestApplicationContext } from '@nestjs/common';
import { WsAdapter } from '@nestjs/platform-ws';
import type { IncomingMessage } from 'node:http';
import { CorsPolicy, ORIGIN_NOT_ALLOWED } from '../common/cors-policy.js';
import { Community } from '../tenancy/community.repository.js';
import { TenancyService, UNKNOWN_HOST_MESSAGE } from '../tenancy/tenancy.service.js';
import { OutputTurns } from './output-turns.js';

export interface BoundTenant {
  readonly community: Community;
  readonly host: string;
}

const TENANT = Symbol('buzzTenant');

export function tenantOf(req: IncomingMessage): BoundTenant | undefined {
  return (req as IncomingMessage & { [TENANT]?: BoundTenant })[TENANT];
}

type VerifyCallback = (result: boolean, code?: number, message?: string, headers?: Record<string, string>) => void;

export const UPGRADES_BUSY_MESSAGE = 'relay is busy: too many connections opening, retry later';
const PLAIN_TEXT = { 'Content-Type': 'text/plain' };

export interface RelayWsAdapterOptions {
  readonly maxFrameBytes: number;
  readonly cors: CorsPolicy;
  /** Admitted upgrades waiting for their turn before the next is answered 503 (the connection cap). */
  readonly maxPendingUpgrades: number;
  /** The upgrades' own queue (tests pass one with a fake clock). */
  readonly upgradeTurns?: OutputTurns;
  /** Counts each refusal by reason (buzz_ws_upgrades_refused_total). */
  readonly refused?: { inc(labels: { reason: UpgradeRefusal }): void };
}

/** Why an upgrade was answered with an HTTP error: 403, 400 or 404, 503. */
export type UpgradeRefusal = 'origin' | 'unknown_host' | 'busy';

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
    const resolution = await this.tenancy.resolve(req.headers.host);
    if (!resolution.ok) return this.refuse(done, 'unknown_host', resolution.reason === 'empty_host' ? 400 : 404, UNKNOWN_HOST_MESSAGE);
    if (resolution.community.archived) return this.refuse(done, 'unknown_host', 404, UNKNOWN_HOST_MESSAGE);
    if (this.upgradeTurns.waiting >= this.options.maxPendingUpgrades) return this.refuse(done, 'busy', 503, UPGRADES_BUSY_MESSAGE);
    (req as IncomingMessage & { [TENANT]?: BoundTenant })[TENANT] = { community: resolution.community, host: resolution.host };
    // ws completes the upgrade inside `done`; a socket that closed while it waited is destroyed there.
    await this.upgradeTurns.run(() => done(true));
  }

  private refuse(done: VerifyCallback, reason: UpgradeRefusal, status: number, message: string): void {
    this.options.refused?.inc({ reason });
    done(false, status, message, PLAIN_TEXT);
  }
}
