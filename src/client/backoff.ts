/**
 * Resubscribe backoff of a live subscription after a deadline `CLOSED` (seed 002): exponential
 * from 1 s, jittered, capped at 30 s, and at the cap for as long as the filter keeps timing out.
 *
 * Attempt n waits `min(30 s, 2^n s + jitter)`, the jitter uniform in `[0, 2^n / 2)` s: 1–1.5 s,
 * 2–3 s, 4–6 s, 8–12 s, 16–24 s, then exactly 30 s. The jitter spreads clients that were closed
 * together; it never goes below the nominal step, so at the cap the load stays at one bounded
 * query per subscription every 30 s (relay.md §2.12, "worst case").
 */
export const RESUBSCRIBE_MIN_DELAY_MS = 1_000;
export const RESUBSCRIBE_MAX_DELAY_MS = 30_000;

/** `attempt` counts from 0; `random` returns [0, 1) like Math.random. */
export function resubscribeDelayMs(attempt: number, random: () => number = Math.random): number {
  const step = Math.min(RESUBSCRIBE_MAX_DELAY_MS, RESUBSCRIBE_MIN_DELAY_MS * 2 ** Math.min(Math.max(0, attempt), 16));
  const jittered = step + Math.floor((step / 2) * random());
  return Math.min(RESUBSCRIBE_MAX_DELAY_MS, Math.max(RESUBSCRIBE_MIN_DELAY_MS, jittered));
}
