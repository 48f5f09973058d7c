/**
 * Publishes events no faster than the relay's message quota, and retries a `rate-limited:`
 * refusal after the relay's own `retry in Ns` hint. Writes are spaced `SEED_DELAY` apart (1.05 s
 * by default: the stock 60 per minute plus 5 % headroom, so clock skew between this process and
 * the relay's sliding window does not turn the last message of a window into a refusal).
 */
import { BuzzClient } from '../../src/client/buzz-client.js';
import { retryAfterMs } from '../../src/client/client-errors.js';
import { NostrEvent } from '../../src/nostr/nostr.types.js';

const DEFAULT_RETRY_MS = 1000;
const RETRY_MARGIN_MS = 50;
export const MAX_RATE_LIMIT_RETRIES = 30;

export class SeedRefusedError extends Error {}

/** Time source and sleep, injectable so the pacing arithmetic can be tested without waiting. */
export interface PacingClock {
  now(): number;
  sleep(ms: number): Promise<void>;
}

const SYSTEM_CLOCK: PacingClock = { now: Date.now, sleep: (ms) => new Promise((r) => setTimeout(r, ms)) };

export class PacedPublisher {
  private readonly intervalMs: number;
  private nextAt = 0;
  retries = 0;

  constructor(
    private readonly client: Pick<BuzzClient, 'publish'>,
    delaySecs: number,
    private readonly log: (line: string) => void,
    private readonly clock: PacingClock = SYSTEM_CLOCK,
  ) {
    this.intervalMs = delaySecs * 1000;
  }

  /** Resolves once the relay accepted the event (or already had it); throws SeedRefusedError otherwise. */
  async publish(event: NostrEvent, what: string): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      await this.pace();
      const { ok, message } = await this.client.publish(event);
      if (ok || message.startsWith('duplicate:')) return;
      if (!message.startsWith('rate-limited:') || attempt >= MAX_RATE_LIMIT_RETRIES) {
        throw new SeedRefusedError(`relay refused ${what} (${event.id}): ${message}`);
      }
      const waitMs = (retryAfterMs(message) ?? DEFAULT_RETRY_MS) + RETRY_MARGIN_MS;
      this.retries += 1;
      this.log(`${message} (${what}); retrying in ${(waitMs / 1000).toFixed(2)} s`);
      this.nextAt = Math.max(this.nextAt, this.clock.now() + waitMs);
    }
  }

  private async pace(): Promise<void> {
    const now = this.clock.now();
    if (this.nextAt > now) await this.clock.sleep(this.nextAt - now);
    this.nextAt = Math.max(this.nextAt, now) + this.intervalMs;
  }
}
