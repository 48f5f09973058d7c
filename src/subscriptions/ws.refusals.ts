/**
 * The socket's own refusals: frames, subscriptions, the handler budget (HandlerGate), the output
 * budget and the connection limits. A failed read's are nostr/read.refusals.ts's.
 */
import { COUNT_TOO_BROAD_MESSAGE } from '../events/count.service.js';
import { Refusal } from '../nostr/refusal.js';

export const WS_REFUSALS = {
  /** A NOTICE, then the socket closes (1009). */
  frameTooLarge: (binary: boolean, bytes: number, limit: number) => new Refusal('error', `${binary ? 'binary frame' : 'frame'} too large (${bytes} bytes, limit ${limit})`),
  /** A REQ or COUNT whose frame did not parse; `error` is the parser's. */
  badMessage: (error: string) => new Refusal('invalid', error),
  tooManySubscriptions: new Refusal('error', 'too many subscriptions'),
  mixedSearch: new Refusal('error', 'mixed search and non-search filters not supported'),
  countTooBroad: new Refusal('restricted', COUNT_TOO_BROAD_MESSAGE),
  /** A read refused because its key held its share of a read gate (BUZZ_KEY_SHARE_PERCENT): slow down. */
  readShare: new Refusal('rate-limited', 'too many concurrent reads for this key'),
  /** The handler budget was full (relay.md §2.4). */
  tooManyConcurrent: new Refusal('rate-limited', 'too many concurrent requests'),
  /** The key already ran its share of the handler budget. */
  tooManyConcurrentForKey: new Refusal('rate-limited', 'too many concurrent requests for this key'),
  /** An EVENT whose ingest failed for a reason that is not a refusal. */
  internalError: new Refusal('error', 'internal server error'),
  /** A subscription whose output did not fit the budget. */
  slowConsumer: new Refusal('error', 'slow consumer: output buffer full'),
  /** The upgrade of an address over BUZZ_MAX_CONNECTIONS_PER_IP (an HTTP 429 before the socket opens). */
  connectionsFromAddress: (limit: number) => new Refusal('rate-limited', `too many connections from this address (limit ${limit}), retry later`),
} as const;
