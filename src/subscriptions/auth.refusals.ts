/** NIP-42 on a socket (relay.md §2.5): the AUTH answers, and what a socket without one is told. */
import { Refusal } from '../nostr/refusal.js';

export const AUTH_REFUSALS = {
  notAuthenticated: new Refusal('auth-required', 'not authenticated'),
  /** The NOTICE before a REQ's CLOSED. */
  authenticateFirst: new Refusal('auth-required', 'authenticate before subscribing'),
  /** The close reason (1008) of a socket with no AUTH by the deadline. */
  deadline: new Refusal('auth-required', 'not authenticated within 5 s'),
  alreadyAuthenticated: new Refusal('auth-required', 'already authenticated'),
  alreadyFailed: new Refusal('auth-required', 'authentication already failed'),
  /** `problem` is what nip42.ts found wrong with the AUTH event, when it found one. */
  verificationFailed: (problem?: string) => new Refusal('auth-required', problem === undefined ? 'verification failed' : `verification failed: ${problem}`),
  /** Not verified within BUZZ_AUTH_VERIFY_TIMEOUT_MS (then the socket closes). */
  verifyTimeout: new Refusal('error', 'authentication not verified in time; reconnect and retry'),
  /** The ban lookup failed: AUTH fails closed (§2.5 step 2). */
  banCheckFailed: new Refusal('error', 'internal error checking restriction state'),
  /** Also the CLOSED of a socket whose key left the relay (AccessRevoker). */
  notRelayMember: new Refusal('restricted', 'not a relay member'),
  /** The key holds BUZZ_MAX_CONNECTIONS_PER_KEY authenticated sockets on this pod. */
  keyConnections: (limit: number) => new Refusal('rate-limited', `too many connections for this key (limit ${limit})`),
  /** The close reason of that socket. */
  keyConnectionsClose: new Refusal('rate-limited', 'too many connections for this key'),
} as const;
