/** What every executed command checks first (command-input.ts, command-replay.guard.ts). */
import { Refusal } from '../nostr/refusal.js';

export const COMMAND_REFUSALS = {
  staleTimestamp: (createdAt: number, nowSecs: number, delta: number, maxSkewSecs: number) =>
    new Refusal('invalid', `event timestamp out of range: created_at=${createdAt}, now=${nowSecs}, delta=${delta}s (max ±${maxSkewSecs}s)`),
  targetPubkey: new Refusal('invalid', 'missing or invalid p tag'),
  /** The tag's value, cut to 32 characters. */
  expirationTag: (raw: string) => new Refusal('invalid', `invalid expiration tag: ${raw.slice(0, 32)}`),
  expirationPast: new Refusal('invalid', 'expiration must be in the future'),
  replayed: new Refusal('invalid', 'replay detected: command already handled'),
  /** Redis failed and BUZZ_REDIS_FAIL_MODE is `closed`. */
  replayUnavailable: new Refusal('error', 'replay protection unavailable'),
} as const;
