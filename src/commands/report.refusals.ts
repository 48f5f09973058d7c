/**
 * A NIP-56 report's refusals (kind 1984). A target that is missing or that the reporter cannot
 * read is TARGET_NOT_FOUND.report (ingest.refusals.ts). Quoted input is cut to 32 characters.
 */
import { Refusal } from '../nostr/refusal.js';

export const REPORT_REFUSALS = {
  pTagMissing: new Refusal('invalid', 'report must include a p tag'),
  pTagNotOne: new Refusal('invalid', 'report must include exactly one p tag'),
  eAndX: new Refusal('invalid', 'report must target only one of e or x'),
  eTagNotOne: new Refusal('invalid', 'report must include at most one e tag'),
  xTagNotOne: new Refusal('invalid', 'report must include at most one x tag'),
  /** `label` names the value: `p tag pubkey`, `e tag event id`, `x tag sha256`. */
  malformed: (label: string) => new Refusal('invalid', `malformed ${label}`),
  typeMissing: new Refusal('invalid', 'report target tag missing report type'),
  unsupportedType: (type: string) => new Refusal('invalid', `unsupported report type: ${type.slice(0, 32)}`),
  /** This relay keeps no media, so an `x` target never resolves. */
  blobNotFound: new Refusal('invalid', 'report target blob not found'),
} as const;
