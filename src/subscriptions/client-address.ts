/**
 * The client address the per-address connection limit counts (ConnectionAdmission).
 *
 * - The peer of the TCP socket, unless that peer is a proxy the operator trusts
 *   (BUZZ_TRUSTED_PROXIES): then the nearest untrusted address in `X-Forwarded-For`, walking
 *   from the right (@fastify/proxy-addr, the algorithm Fastify and Express use). With no trusted
 *   proxy the header is never believed, so a client cannot pick the address it is counted under.
 * - An IPv4-mapped IPv6 peer (`::ffff:1.2.3.4`, a dual-stack listener) counts as its IPv4 address.
 * - An IPv6 address counts by its /64: one subscriber (one home, one phone) is routinely given a
 *   whole /64, so counting single IPv6 addresses would give one client 2^64 separate limits.
 */
import proxyaddr from '@fastify/proxy-addr';
import ipaddr from 'ipaddr.js';
import type { IncomingMessage } from 'node:http';

type Trust = (addr: string, hop: number) => boolean;

export class ClientAddresses {
  private readonly trust: Trust | undefined;
  private warned = false;

  /** `onIgnoredHeader` hears once about an `X-Forwarded-For` that was not believed because no proxy is trusted. */
  constructor(
    trustedProxies: readonly string[],
    private readonly onIgnoredHeader?: (peer: string) => void,
  ) {
    this.trust = trustedProxies.length > 0 ? proxyaddr.compile([...trustedProxies]) : undefined;
  }

  /** The address this request's connection counts under. */
  of(req: IncomingMessage): string {
    const peer = req.socket.remoteAddress ?? '';
    if (this.trust !== undefined) return limitKey(proxyaddr(req, this.trust));
    if (!this.warned && req.headers['x-forwarded-for'] !== undefined) {
      this.warned = true;
      this.onIgnoredHeader?.(peer);
    }
    return limitKey(peer);
  }
}

/** IPv4 as it is (IPv4-mapped IPv6 unwrapped), IPv6 as its /64 prefix; anything else unchanged. */
export function limitKey(address: string): string {
  if (!ipaddr.isValid(address)) return address;
  try {
    const parsed = ipaddr.process(address);
    if (parsed.kind() === 'ipv4') return parsed.toString();
    return `${ipaddr.IPv6.networkAddressFromCIDR(`${parsed.toString()}/64`).toString()}/64`;
  } catch {
    return address;
  }
}
