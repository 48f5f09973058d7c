import type { RefusalCode } from '../nostr/refusal.js';

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
