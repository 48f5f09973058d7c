import { parseRefusal, Refusal, RefusalCode } from '../nostr/refusal.js';

/** An ingest refusal, thrown by a gate or a command: answered `["OK", id, false, refusal.wire]`. */
export class Rejection extends Error {
  constructor(readonly refusal: Refusal) {
    super(refusal.wire);
    this.name = 'Rejection';
  }
}

/**
 * Refuses the event being ingested. A string is the reason of a feature that has no catalogue
 * yet, read once here; the last catalogue removes it.
 */
export function reject(refusal: Refusal | string): never {
  throw new Rejection(typeof refusal === 'string' ? parseRefusal(refusal)! : refusal);
}

/** The `reason` label of `buzz_events_rejected_total` for a refusal's code. */
export function rejectionLabel(code: RefusalCode): 'auth' | 'invalid' | 'scope' | 'error' {
  switch (code) {
    case 'auth-required':
    case 'blocked':
      return 'auth';
    case 'restricted':
      return 'scope';
    case 'error':
      return 'error';
    default:
      return 'invalid';
  }
}
