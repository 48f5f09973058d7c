/**
 * Channel access (relay.md §2.6, §2.9, §5.2 step 9): a read's scope and its sensitive-kind gates
 * (ReadAccessService), a write to a private channel, and a subscription evicted from a channel it
 * lost.
 */
import { Refusal } from '../nostr/refusal.js';

export const CHANNEL_ACCESS_REFUSALS = {
  notChannelMember: new Refusal('restricted', 'not a channel member'),
  tooManyChannels: new Refusal('restricted', 'too many explicit channels'),
  /** The REQ's wording and COUNT's (`/query` and `/count` use COUNT's) of one gate. */
  pGatedEvents: new Refusal('restricted', 'p-gated events require #p matching your pubkey'),
  pGatedKinds: new Refusal('restricted', 'p-gated kinds require #p tag matching your pubkey'),
  engramReads: new Refusal('restricted', 'agent-engram reads require authors=[self] or #p=[self]'),
  authorOnlyKinds: new Refusal('restricted', 'author-only kinds require authors=[self]'),
} as const;
