/** Work refused for memory (the process budget's pools, src/memory). */
import { Refusal } from '../nostr/refusal.js';

export const MEMORY_REFUSALS = {
  /** The pool for that kind of work is full. */
  poolFull: new Refusal('error', 'relay memory budget full, retry later'),
  /** The key holds its share of that pool. */
  keyShare: new Refusal('rate-limited', 'this key holds its share of the relay memory budget, retry later'),
  /** A subscription whose filters do not fit the key's share of the `filters` pool. */
  filterShare: new Refusal('rate-limited', "this key's subscriptions hold too much filter data; close some first"),
} as const;
