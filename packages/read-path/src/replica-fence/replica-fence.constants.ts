/**
 * Fixed values of the replica fence (database.md §2.6, §4, §7; seed 001).
 */

/** Proof ring capacity: about 60 s at the 500 ms default cadence. */
export const PROOF_RING_CAPACITY = 120;
/** An entry older than this no longer counts as a live proof (availability hygiene, not soundness). */
export const FENCE_STALENESS_MS = 30_000;
/** Default probe interval (`BUZZ_REPLICA_FENCE_PROBE_INTERVAL_MS` unset). */
export const PROBE_INTERVAL_DEFAULT_MS = 500;
/** Accepted interval range; the floor keeps the ring covering more than the staleness gate. */
export const PROBE_INTERVAL_MIN_MS = 300;
export const PROBE_INTERVAL_MAX_MS = 10_000;
/** Probe session `lock_timeout` (seed 001): a waiting probe queues new channel writes behind it. */
export const PROBE_LOCK_TIMEOUT_MS = 1000;
/** Probe session `statement_timeout` and `idle_in_transaction_session_timeout` (seed 001). */
export const PROBE_STATEMENT_TIMEOUT_MS = 2000;
export const PROBE_IDLE_IN_TXN_TIMEOUT_MS = 2000;
/** Client-side deadline of one whole beat (`PROBE_DEADLINE`). */
export const PROBE_DEADLINE_MS = 5000;
/** Probe pool acquire timeout (design choice): an unreachable writer reports `acquire_timeout` first. */
export const PROBE_ACQUIRE_TIMEOUT_MS = 2000;
/** `application_name` of the probe's one connection. */
export const PROBE_APPLICATION_NAME = 'buzz-replica-fence-probe';
/** Failure warnings after the first of a run are logged at most this often. */
export const PROBE_WARN_THROTTLE_MS = 10_000;

/** Commit latency slack of {@link minReadBudgetMs}. */
const COMMIT_SLACK_MS = 200;

/**
 * The smallest bounded-read budget that survives one beat waiting out the lock timeout:
 * `interval + PROBE_LOCK_TIMEOUT + 200 ms` (1700 ms at the default interval).
 */
export function minReadBudgetMs(intervalMs: number): number {
  return intervalMs + PROBE_LOCK_TIMEOUT_MS + COMMIT_SLACK_MS;
}

/** The start-up warning text, or undefined when none is due (no reader, budget off, or large enough). */
export function readBudgetWarning(budgetMs: number, intervalMs: number, hasReader: boolean): string | undefined {
  const min = minReadBudgetMs(intervalMs);
  if (!hasReader || budgetMs <= 0 || budgetMs >= min) return undefined;
  return (
    `RoutedReaderModule readMaxAgeMs ${budgetMs} (BUZZ_REPLICA_READ_MAX_AGE_MS in the relay) is below the ` +
    `minimum read budget ${min} ms for a ${intervalMs} ms probe interval (interval + 1000 ms lock timeout + ` +
    `200 ms): one late beat will spill bounded reads to the writer`
  );
}

// The ring must outlast the staleness gate at the fastest allowed cadence (120 × 300 ms = 36 s > 30 s).
if (PROOF_RING_CAPACITY * PROBE_INTERVAL_MIN_MS <= FENCE_STALENESS_MS) {
  throw new Error('proof ring capacity × minimum probe interval must exceed the fence staleness gate');
}
