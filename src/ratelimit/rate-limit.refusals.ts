/** The per-key quotas' refusals (RateLimitService, relay.md §2.4, §3.1 step 4). */
import { Refusal } from '../nostr/refusal.js';

export const RATE_LIMIT_REFUSALS = {
  /** Whole seconds until the oldest hit leaves the window (clients read the `retry in Ns` hint). */
  quotaExceeded: (retryAfterSecs: number) => new Refusal('rate-limited', `quota exceeded; retry in ${retryAfterSecs}s`),
  /** Redis failed and BUZZ_REDIS_FAIL_MODE is `closed` (HTTP 503). */
  sharedAdmissionUnavailable: new Refusal('rate-limited', 'shared admission unavailable'),
} as const;
