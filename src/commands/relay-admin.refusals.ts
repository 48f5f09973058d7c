/**
 * The relay-administration commands' refusals (9030–9033 and the NIP-43 leave, 28936), worded as
 * upstream words them (`invalid: actor not authorized: …`). Quoted input is cut to 32 characters.
 */
import { Refusal } from '../nostr/refusal.js';

export const RELAY_ADMIN_REFUSALS = {
  notAdmin: new Refusal('invalid', 'actor not authorized: must be admin or owner'),
  notOwner: new Refusal('invalid', 'actor not authorized: must be owner'),
  onlyOwnerGrantsAdmin: new Refusal('invalid', 'actor not authorized: only owner can grant admin role'),
  adminsRemoveMembers: new Refusal('invalid', 'actor not authorized: admins can only remove members'),
  addOwner: new Refusal('invalid', 'invalid role: use kind:9032 to promote to owner'),
  invalidRole: (role: string) => new Refusal('invalid', `invalid role: ${role.slice(0, 32)}`),
  roleMissing: new Refusal('invalid', 'missing role tag'),
  setOwner: new Refusal('invalid', 'cannot set role to owner'),
  removeSelf: new Refusal('invalid', 'cannot remove yourself'),
  removeOwner: new Refusal('invalid', 'cannot remove the relay owner'),
  changeOwnRole: new Refusal('invalid', 'cannot change your own role'),
  changeOwnerRole: new Refusal('invalid', "cannot change the relay owner's role"),
  memberNotFound: (pubkey: string) => new Refusal('invalid', `member not found: ${pubkey}`),

  membershipNotEnabled: new Refusal('invalid', 'relay membership is not enabled'),
  leaveTimestamp: (delta: number) => new Refusal('invalid', `leave request timestamp out of range (delta=${delta}s, max ±120s)`),
  leaveUnprotected: new Refusal('invalid', 'leave request must include NIP-70 protected event tag ["-"]'),
  leaveNotMember: new Refusal('invalid', 'you are not a relay member'),
  ownerCannotLeave: new Refusal('invalid', 'relay owner cannot leave'),

  threadRepliesWord: new Refusal('invalid', 'thread_replies_in_channel must be true or false'),
  iconCharacters: new Refusal('invalid', 'icon contains invalid characters'),
  iconScheme: new Refusal('invalid', 'icon must be an http(s) URL or data:image/* URL'),
  iconDataUrlTooLong: (bytes: number, max: number) => new Refusal('invalid', `icon data URL too long: ${bytes} bytes (max ${max})`),
  iconUrlTooLong: (bytes: number, max: number) => new Refusal('invalid', `icon URL too long: ${bytes} bytes (max ${max})`),
} as const;
