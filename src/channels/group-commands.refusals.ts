/** The NIP-29 group commands' refusals (GroupCommandService, kinds 9000–9022). */
import { Refusal } from '../nostr/refusal.js';

export const GROUP_COMMAND_REFUSALS = {
  channelNotFound: new Refusal('invalid', 'channel not found'),
  adminRequired: new Refusal('restricted', 'channel admin role required'),
  ownerRequired: new Refusal('restricted', 'channel owner role required'),
  higherRank: new Refusal('restricted', 'cannot act on a member of equal or higher rank'),

  emptyName: new Refusal('invalid', 'channel name must not be empty'),
  unknownChannelType: new Refusal('invalid', 'unknown channel_type'),
  visibility: new Refusal('invalid', 'visibility must be open or private'),
  channelExists: new Refusal('duplicate', 'channel already exists'),

  alreadyMember: new Refusal('duplicate', 'already a channel member'),
  privateChannel: new Refusal('restricted', 'channel is private'),
  badInviteCode: new Refusal('restricted', 'invite code is invalid, already used or expired'),
  /** A private channel that took too many wrong codes refuses code joins until its window ends. */
  failedJoins: new Refusal('rate-limited', 'too many failed invite codes for this channel, retry later'),
  needsPTag: new Refusal('invalid', 'command needs at least one p tag'),
  unknownMemberRole: new Refusal('invalid', 'unknown member role'),

  codesPerEvent: (max: number) => new Refusal('invalid', `at most ${max} code tags per invite`),
  codeLength: (min: number, max: number) => new Refusal('invalid', `invite code must be ${min} to ${max} characters`),
  duplicateCode: new Refusal('invalid', 'duplicate invite code'),
  expirationNotFuture: new Refusal('invalid', 'invite expiration must be a future unix time'),
  expirationTooFar: (days: number) => new Refusal('invalid', `invite expiration at most ${days} days ahead`),
  openCodes: (max: number) => new Refusal('restricted', `a channel holds at most ${max} open invite codes`),
  codeExists: new Refusal('invalid', 'invite code already exists in this channel'),
} as const;
