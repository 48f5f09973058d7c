/**
 * `event_visible_to_reader`: per-event rules for gated kinds, applied to every
 * history row and every live delivery.
 */
import { NostrEvent } from '../common/nostr.types.js';
import { AUTHOR_ONLY_KINDS, P_GATED_KINDS, RESULT_GATED_KINDS, SHARED_GATED_KINDS } from './kinds.js';

export function eventVisibleToReader(ev: NostrEvent, reader: string): boolean {
  const mentioned = () => ev.tags.some((t) => t[0] === 'p' && t[1] === reader);
  if (RESULT_GATED_KINDS.has(ev.kind)) return mentioned();
  if (AUTHOR_ONLY_KINDS.has(ev.kind)) return ev.pubkey === reader;
  if (P_GATED_KINDS.has(ev.kind)) return ev.pubkey === reader || mentioned();
  if (SHARED_GATED_KINDS.has(ev.kind)) {
    return ev.pubkey === reader || ev.tags.filter((t) => t[0] === 'shared' && t[1] === 'true').length === 1;
  }
  return true;
}
