import { channelIdOf } from '../nostr/group-id.js';
import { NostrEvent } from '../nostr/nostr.types.js';
import { visibilityOf } from '../channels/group-commands.service.js';
import { deriveChannel } from './event-derivation.js';
import { parseRefusal, Refusal, Rejection } from '../nostr/refusal.js';

const CHANNEL = '11111111-1111-4111-8111-111111111111';
const ID = 'd'.repeat(64);
const PK = 'a'.repeat(64);

const BAD_GROUP_ID = 'invalid: group id (h tag) must be a UUID or 1 to 64 letters, digits, - and _';
/** A refused derivation, its reason pinned as the client reads it. */
const refused = (reason: string) => ({ ok: false, reason: parseRefusal(reason) });

function event(kind: number, tags: string[][]): NostrEvent {
  return { id: 'f'.repeat(64), pubkey: PK, created_at: 1_700_000_000, kind, tags, content: '', sig: '0'.repeat(128) };
}

describe('deriveChannel for NIP-29 commands', () => {
  it.each([9000, 9001, 9002, 9005, 9007, 9008, 9009, 9021, 9022])('kind %i needs a group id in h: a UUID, or a NIP-29 id mapped to one', (kind) => {
    expect(deriveChannel(event(kind, [['h', CHANNEL.toUpperCase()]]))).toEqual({ ok: true, channelId: CHANNEL, fromTarget: undefined });
    expect(deriveChannel(event(kind, [['h', 'pizza']]))).toEqual({ ok: true, channelId: channelIdOf('pizza'), fromTarget: undefined });
    expect(deriveChannel(event(kind, [['h', 'pizza party']]))).toEqual(refused(BAD_GROUP_ID));
    expect(deriveChannel(event(kind, []))).toEqual(refused('invalid: channel-scoped events must include an h tag'));
  });

  it('a chat message whose h tag is there but not a group id is told so, not that the tag is missing', () => {
    expect(deriveChannel(event(9, [['h', 'pizza party']]))).toEqual(refused(BAD_GROUP_ID));
    expect(deriveChannel(event(9, [['h', 'pizza party'], ['h', 'pizza']]))).toEqual({ ok: true, channelId: channelIdOf('pizza'), fromTarget: undefined });
    expect(deriveChannel(event(9, []))).toEqual(refused('invalid: channel-scoped events must include an h tag'));
  });

  it('kind 5 refuses several targets before any lookup', () => {
    expect(deriveChannel(event(5, [['e', ID], ['e', ID]]))).toEqual(refused('invalid: deletion must have exactly one e or a target (got 2)'));
  });
});

describe('visibilityOf (9007/9002)', () => {
  it.each([
    [[['visibility', 'private']], 'private'],
    [[['visibility', 'open'], ['private']], 'open'],
    [[['private']], 'private'],
    [[['closed']], 'private'],
    [[['public'], ['closed']], 'private'],
    [[['public']], 'open'],
    [[['open']], 'open'],
    [[['name', 'x']], undefined],
  ])('%j → %s', (tags, visibility) => {
    expect(visibilityOf(event(9002, tags))).toBe(visibility);
  });

  it('refuses an unknown explicit visibility', () => {
    expect(() => visibilityOf(event(9002, [['visibility', 'secret']]))).toThrow(new Rejection(new Refusal('invalid', 'visibility must be open or private')));
  });
});
