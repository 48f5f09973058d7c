/** Wire shapes and injection points of the client helper. */
import { NostrEvent } from '../nostr/nostr.types.js';

/** A NIP-01 filter exactly as sent on the wire (`#e`, `#h`, … and the relay's extension fields included). */
export interface ClientFilter {
  ids?: string[];
  authors?: string[];
  kinds?: number[];
  since?: number;
  until?: number;
  limit?: number;
  search?: string;
  [field: string]: unknown;
}

export interface PublishResult {
  readonly ok: boolean;
  /** The relay's OK message: '' on plain success, else a prefixed reason (`rate-limited: …`, `invalid: …`). */
  readonly message: string;
}

/** Timer functions, injectable so tests can drive backoffs and request timeouts without waiting. */
export interface ClientTimers {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const SYSTEM_TIMERS: ClientTimers = {
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

/** What the connection routes to one subscription id. */
export interface SubscriptionSink {
  event(ev: NostrEvent): void;
  eose(): void;
  count(n: number): void;
  closed(reason: string): void;
}
