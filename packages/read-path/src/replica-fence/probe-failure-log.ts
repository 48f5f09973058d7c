/**
 * Throttle of the probe's failure warning (design choice, database.md §4.5): warn on the first
 * failure of a run, then at most once every 10 s while failures continue; one info line when
 * a beat succeeds after failures.
 */
import { PROBE_WARN_THROTTLE_MS } from './replica-fence.constants.js';

export class ProbeFailureLog {
  private consecutive = 0;
  private lastWarnAt: number | undefined;

  constructor(private readonly throttleMs = PROBE_WARN_THROTTLE_MS) {}

  /** Returns the run length so far and whether this failure should be logged. */
  failed(now: number): { consecutiveFailures: number; warn: boolean } {
    this.consecutive += 1;
    const warn = this.lastWarnAt === undefined || now - this.lastWarnAt >= this.throttleMs;
    if (warn) this.lastWarnAt = now;
    return { consecutiveFailures: this.consecutive, warn };
  }

  /** Returns the number of failures this success ended (0: nothing to log). */
  succeeded(): number {
    const ended = this.consecutive;
    this.consecutive = 0;
    this.lastWarnAt = undefined;
    return ended;
  }
}
