/**
 * The refusals of an event's shape and limits (event-validation.ts), of its group id
 * (group-id.ts) and of a deletion's target (deletion-target.ts): all `invalid`, each decided before the relay looks anything up.
 */
import { Refusal } from './refusal.js';

export const EVENT_REFUSALS = {
  notAnObject: new Refusal('invalid', 'event must be a JSON object'),
  id: new Refusal('invalid', 'id must be 64 lowercase hex characters'),
  pubkey: new Refusal('invalid', 'pubkey must be 64 lowercase hex characters'),
  sig: new Refusal('invalid', 'sig must be 128 lowercase hex characters'),
  createdAt: new Refusal('invalid', 'created_at must be a non-negative integer'),
  kind: (max: number) => new Refusal('invalid', `kind must be an integer between 0 and ${max}`),
  tags: new Refusal('invalid', 'tags must be an array of arrays of strings'),
  content: new Refusal('invalid', 'content must be a string'),
  timestampDrift: new Refusal('invalid', 'event timestamp too far from server time'),
  contentTooLarge: (max: number, got: number) => new Refusal('invalid', `content exceeds maximum size of ${max} bytes (got ${got})`),
  tooManyTags: (got: number, max: number) => new Refusal('invalid', `too many tags (got ${got}, maximum is ${max})`),
  tagTooWide: (got: number, max: number) => new Refusal('invalid', `tag has too many elements (got ${got}, maximum is ${max})`),
  tagElementTooLarge: (max: number) => new Refusal('invalid', `tag element exceeds maximum size of ${max} bytes`),
  dTagTooLong: new Refusal('invalid', 'd tag too long'),
  /** `found` names what storable-text.ts found (a NUL, an unpaired surrogate). */
  unstorableContent: (found: string) => new Refusal('invalid', `content contains ${found}, which the relay cannot store`),
  unstorableTag: (i: number, j: number, found: string) => new Refusal('invalid', `tags[${i}][${j}] contains ${found}, which the relay cannot store`),
  /** An `h` tag that is neither a UUID nor a NIP-29 group id. */
  badGroupId: new Refusal('invalid', 'group id (h tag) must be a UUID or 1 to 64 letters, digits, - and _'),
  /** A deletion (kinds 5 and 9005) names exactly one target, well formed (deletion-target.ts). */
  deletionTargets: (got: number) => new Refusal('invalid', `deletion must have exactly one e or a target (got ${got})`),
  deletionEventId: new Refusal('invalid', 'deletion e tag must be a 64-hex event id'),
  deletionCoordinate: new Refusal('invalid', 'deletion a tag must be <kind>:<pubkey>:<d>'),
} as const;
