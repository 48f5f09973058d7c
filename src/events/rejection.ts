import { Refusal, RefusalCode } from '../nostr/refusal.js';

/** An ingest refusal, thrown by a gate or a command: answered `["OK", id, false, refusal.wire]`. */
export class Rejection extends Error {
  constructor(readonly refusal: Refusal) {
    super(refusal.wire);
    this.name = 'Rejection';
  }
}

/** Refuses the event being ingested, with a refusal of its feature's catalogue. */
export function reject(refusal: Refusal): never {
  throw new Rejection(refusal);
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
