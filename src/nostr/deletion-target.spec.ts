import { deletionTarget } from './deletion-target.js';
import type { NostrEvent } from './nostr.types.js';
import { parseRefusal } from './refusal.js';

const CHANNEL = '11111111-1111-4111-8111-111111111111';
const ID = 'd'.repeat(64);
const PK = 'a'.repeat(64);

/** A refused target, its reason pinned as the client reads it. */
const refused = (reason: string) => ({ ok: false, reason: parseRefusal(reason) });

function event(kind: number, tags: string[][]): NostrEvent {
  return { id: 'f'.repeat(64), pubkey: PK, created_at: 1_700_000_000, kind, tags, content: '', sig: '0'.repeat(128) };
}

describe('deletionTarget (kind 5 and 9005: exactly one e or a)', () => {
  it('takes one e or one a', () => {
    expect(deletionTarget(event(5, [['e', ID], ['k', '9']]))).toEqual({ ok: true, id: ID });
    expect(deletionTarget(event(9005, [['h', CHANNEL], ['a', `30023:${PK}:x:y`]]))).toEqual({ ok: true, coordinate: { kind: 30023, pubkey: PK, d: 'x:y' } });
  });

  it.each([
    [[], 'invalid: deletion must have exactly one e or a target (got 0)'],
    [[['e', ID], ['e', ID]], 'invalid: deletion must have exactly one e or a target (got 2)'],
    [[['e', ID], ['a', `1:${PK}:`]], 'invalid: deletion must have exactly one e or a target (got 2)'],
    [[['e', ID.toUpperCase()]], 'invalid: deletion e tag must be a 64-hex event id'],
    [[['a', '30023:nothex:x']], 'invalid: deletion a tag must be <kind>:<pubkey>:<d>'],
  ])('refuses %j', (tags, reason) => {
    expect(deletionTarget(event(5, tags))).toEqual(refused(reason));
  });
});
