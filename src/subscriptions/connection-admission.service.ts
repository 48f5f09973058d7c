/**
 * How many WebSockets the pod holds, and for whom (docs/security.md, "Connection limits and fair
 * shares"). Three bounds, each refused with a clear reason rather than a silent drop:
 *
 * - **Per address** (BUZZ_MAX_CONNECTIONS_PER_IP): counted at the upgrade, authenticated or not,
 *   under the address ClientAddresses gives (the trusted proxy's `X-Forwarded-For`, IPv6 by /64).
 *   Refused with HTTP 429.
 * - **The global cap with a reserve** (BUZZ_MAX_CONNECTIONS, BUZZ_CONNECTION_RESERVE): the last
 *   `reserve` places under the cap go only to an address holding fewer than RESERVE_PER_ADDRESS
 *   sockets. Whoever fills the rest (one address with idle authenticated sockets, or many) cannot
 *   take them, so a new client elsewhere still gets its AUTH challenge. Refused with HTTP 503.
 *   Unauthenticated sockets in the reserve are bounded the same way per address, and the 5 s AUTH
 *   deadline closes them.
 * - **Per key** (BUZZ_MAX_CONNECTIONS_PER_KEY): authenticated sockets per pubkey on this pod,
 *   checked when an AUTH succeeds (AuthHandler), refused with `OK false "rate-limited: …"` and a
 *   close naming the limit.
 */
import { Inject, Injectable, Logger } from '@nestjs/common';
import type { IncomingMessage } from 'node:http';
import type { AppConfig } from '../config/app-config.js';
import { APP_CONFIG } from '../config/config.tokens.js';
import { ClientAddresses } from './client-address.js';

/**
 * Sockets an address may already hold and still be given a reserved place: enough for one
 * person's devices, too few for any one address to fill the reserve.
 */
export const RESERVE_PER_ADDRESS = 4;

/** Why an upgrade was refused by the connection limits: 429 for the address, 503 for the pod. */
export type ConnectionRefusal = 'ip_limit' | 'capacity';

/** One admitted connection's place; released once, when its socket closes. */
export interface ConnectionTicket {
  readonly address: string;
  release(): void;
}

@Injectable()
export class ConnectionAdmission {
  private readonly logger = new Logger('ConnectionAdmission');
  private readonly addresses: ClientAddresses;
  private readonly perAddress = new Map<string, number>();
  private readonly perKey = new Map<string, number>();
  private open = 0;

  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {
    this.addresses = new ClientAddresses(config.trustedProxies, (peer) =>
      this.logger.warn(
        { peer },
        'X-Forwarded-For is not believed (BUZZ_TRUSTED_PROXIES is empty): behind a proxy, every client it forwards counts against one per-address connection limit',
      ),
    );
  }

  /** Connections holding a place (admitted upgrades, open sockets). */
  get connections(): number {
    return this.open;
  }

  /** The address a request counts under. */
  addressOf(req: IncomingMessage): string {
    return this.addresses.of(req);
  }

  /** A place for a new connection from `address`, or why there is none. */
  admit(address: string): ConnectionTicket | ConnectionRefusal {
    const { maxConnections, connectionReserve, maxConnectionsPerIp } = this.config.limits;
    const held = this.perAddress.get(address) ?? 0;
    if (held >= maxConnectionsPerIp) return 'ip_limit';
    if (this.open >= maxConnections) return 'capacity';
    if (this.open >= maxConnections - connectionReserve && held >= RESERVE_PER_ADDRESS) return 'capacity';
    this.open += 1;
    this.perAddress.set(address, held + 1);
    let holding = true;
    return {
      address,
      release: () => {
        if (!holding) return;
        holding = false;
        this.open -= 1;
        decrement(this.perAddress, address);
      },
    };
  }

  /** Counts one more authenticated socket for `pubkey`; false (nothing counted) when it holds the limit already. */
  claimKey(pubkey: string): boolean {
    const held = this.perKey.get(pubkey) ?? 0;
    if (held >= this.config.limits.maxConnectionsPerKey) return false;
    this.perKey.set(pubkey, held + 1);
    return true;
  }

  /** The authenticated socket of `pubkey` closed. */
  releaseKey(pubkey: string): void {
    decrement(this.perKey, pubkey);
  }
}

function decrement(counts: Map<string, number>, key: string): void {
  const n = (counts.get(key) ?? 0) - 1;
  if (n > 0) counts.set(key, n);
  else counts.delete(key);
}
