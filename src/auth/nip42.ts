/**
 * NIP-42 AUTH event checks that need no database: kind, challenge, relay tag
 * bound to the tenant host, and the ±60 s clock window. The signature is
 * checked by the caller (off the event loop).
 */
import { NostrEvent } from '../nostr/nostr.types.js';
import { hostWithoutPort, isLoopbackHost, normalizeHost } from '../common/host.js';

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
  return authEventProblem(ev, expect) === undefined;
}

/**
 * What is wrong with an AUTH event, in words a client author can act on (the `auth-required:`
 * answer carries it), or undefined when the checks pass. Names only what the client sent or
 * could know: the relay's own host, never another tenant's.
 */
export function authEventProblem(ev: NostrEvent, expect: AuthExpectation): string | undefined {
  if (ev.kind !== AUTH_KIND) return `kind must be ${AUTH_KIND}`;
  if (Math.abs(ev.created_at - expect.nowSecs) > AUTH_CLOCK_WINDOW_SECS) return `created_at is more than ${AUTH_CLOCK_WINDOW_SECS} s from the relay's clock`;
  const challenge = ev.tags.find((t) => t[0] === 'challenge')?.[1];
  if (challenge !== expect.challenge) return challenge === undefined ? 'no challenge tag' : "challenge tag does not match this connection's challenge";
  const relay = ev.tags.find((t) => t[0] === 'relay')?.[1];
  if (relay === undefined) return 'no relay tag';
  if (!relayTagMatches(relay, expect)) return `relay tag must name this relay (${expect.scheme}//${expect.tenantHost}/)`;
  return undefined;
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
