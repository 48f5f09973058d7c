/**
 * NIP-42 AUTH event checks that need no database: kind, challenge, relay tag
 * bound to the tenant host, and the ±60 s clock window. The signature is
 * checked by the caller (off the event loop).
 */
import { NostrEvent } from '../common/nostr.types.js';
import { hostWithoutPort, isLoopbackHost, normalizeHost } from '../tenancy/host.js';

export const AUTH_KIND = 22242;
export const AUTH_CLOCK_WINDOW_SECS = 60;

export interface AuthExpectation {
  readonly challenge: string;
  /** The connection's normalised tenant host, never a static configured host. */
  readonly tenantHost: string;
  /** `wss:` when RELAY_URL starts with wss://, else `ws:`. */
  readonly scheme: 'ws:' | 'wss:';
  readonly nowSecs: number;
}

export function checkAuthEvent(ev: NostrEvent, expect: AuthExpectation): boolean {
  if (ev.kind !== AUTH_KIND) return false;
  if (Math.abs(ev.created_at - expect.nowSecs) > AUTH_CLOCK_WINDOW_SECS) return false;
  const challenge = ev.tags.find((t) => t[0] === 'challenge')?.[1];
  if (challenge !== expect.challenge) return false;
  const relay = ev.tags.find((t) => t[0] === 'relay')?.[1];
  return relay !== undefined && relayTagMatches(relay, expect);
}

/** The relay tag must name this tenant: same scheme, same host (loopback spellings equal), root path. */
export function relayTagMatches(relayTag: string, expect: Pick<AuthExpectation, 'tenantHost' | 'scheme'>): boolean {
  let url: URL;
  try {
    url = new URL(relayTag);
  } catch {
    return false;
  }
  if (url.protocol !== expect.scheme) return false;
  if (url.pathname !== '/' && url.pathname !== '') return false;
  const tagHost = normalizeHost(url.host);
  return tagHost !== undefined && sameHost(tagHost, expect.tenantHost);
}

function sameHost(a: string, b: string): boolean {
  if (a === b) return true;
  const [ah, bh] = [hostWithoutPort(a), hostWithoutPort(b)];
  const port = (h: string) => h.slice(hostWithoutPort(h).length);
  return isLoopbackHost(ah) && isLoopbackHost(bh) && port(a) === port(b);
}
