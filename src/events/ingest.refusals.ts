/**
 * The refusals of the write path (relay.md §5.2), WebSocket EVENT and `POST /events` alike, in the
 * order of its gates. Shape and limits are nostr/event.refusals.ts's; a command's are its own
 * catalogue's (commands/), a NIP-29 group command's channels/group-commands.refusals.ts's.
 */
import { Refusal } from '../nostr/refusal.js';

export const INGEST_REFUSALS = {
  /** Accepted, not a refusal: the `OK true` message of an event stored already (NIP-01's bare `duplicate:`). */
  alreadyStored: new Refusal('duplicate', ''),

  // Before ingest: the session's identity, and the HTTP body.
  pubkeyMismatch: new Refusal('invalid', 'event pubkey does not match authenticated identity'),
  authEventOverEvent: new Refusal('invalid', 'AUTH events cannot be submitted via EVENT'),
  bodyNotOneEvent: new Refusal('invalid', 'the body must be one event object (not an array)'),

  // The kind, before the signature.
  authEvent: new Refusal('invalid', 'AUTH events cannot be submitted'),
  membershipNotice: new Refusal('invalid', 'membership notifications are relay-signed only'),
  relayOnlyKind: new Refusal('restricted', 'relay-only kind'),
  webSocketOnlyKind: (kind: number) => new Refusal('invalid', `kind ${kind} is only accepted via WebSocket`),
  unknownKind: new Refusal('restricted', 'unknown event kind'),

  // The signature (SignatureVerifier).
  idMismatch: new Refusal('invalid', 'event id does not match'),
  badSignature: new Refusal('invalid', 'bad signature'),
  badPubkey: new Refusal('invalid', 'bad public key'),
  malformed: new Refusal('invalid', 'malformed event'),

  // The channel and the references (event-derivation.ts).
  reactionWithoutTarget: new Refusal('invalid', 'reaction must reference a target event via e tag'),
  channelTagMissing: new Refusal('invalid', 'channel-scoped events must include an h tag'),
  channelArchived: new Refusal('invalid', 'channel is archived'),
  reactionContextRefs: (max: number) => new Refusal('invalid', `a reaction may name at most ${max} events besides its target`),
  threadParentElsewhere: new Refusal('invalid', 'thread parent is in another channel'),

  // Per kind (kind-validators.ts).
  profileNotJsonObject: new Refusal('invalid', 'profile content must be a JSON object'),
  editWithoutTarget: new Refusal('invalid', 'edit must reference the edited message via e tag'),
  editInOtherChannel: new Refusal('invalid', "edit must be in the edited message's channel"),
  editByOther: new Refusal('restricted', 'only the author or its owner can edit a message'),
  voteWithoutTarget: new Refusal('invalid', 'vote must reference a forum post or comment via e tag'),
  voteTarget: new Refusal('invalid', 'vote target must be a forum post or comment in the same channel'),
  diffTooLarge: (max: number, got: number) => new Refusal('invalid', `diff content exceeds maximum size of ${max} bytes (got ${got})`),
  diffRepo: new Refusal('invalid', 'diff requires a repo tag with an http or https URL'),
  diffCommit: new Refusal('invalid', 'diff requires a commit tag of at least 7 hex characters'),

  // Storage.
  reactionEmojiTooLong: new Refusal('invalid', 'reaction emoji exceeds 64 characters'),
  reactionExists: new Refusal('duplicate', 'reaction already exists'),
  newerVersionStored: new Refusal('duplicate', 'a newer version of this event is already stored'),
} as const;

/**
 * The answer of each write path whose named event is missing. An event the writer may not read
 * gets the same answer (TargetVisibility.seen), so none of these tells whether an id exists in a
 * private channel.
 */
export const TARGET_NOT_FOUND = {
  reaction: new Refusal('invalid', 'reaction target event not found'),
  threadParent: new Refusal('invalid', 'thread parent event not found'),
  comment: new Refusal('invalid', 'comment parent event not found'),
  edit: new Refusal('invalid', 'edited message not found'),
  report: new Refusal('invalid', 'report target event not found'),
} as const;
