import { NostrEvent } from '../nostr/nostr.types.js';
import { KindTarget, MAX_DIFF_CONTENT_BYTES, kindShapeError, kindTargetError, kindTargetOf } from './kind-validators.js';

const AUTHOR = 'a'.repeat(64);
const OWNER = 'b'.repeat(64);
const STRANGER = 'c'.repeat(64);
const TARGET_ID = 'd'.repeat(64);
const OTHER_ID = 'e'.repeat(64);
const CHANNEL = '11111111-1111-4111-8111-111111111111';
const OTHER_CHANNEL = '22222222-2222-4222-8222-222222222222';

function event(kind: number, overrides: Partial<NostrEvent> = {}): NostrEvent {
  return { id: 'f'.repeat(64), pubkey: AUTHOR, created_at: 1_700_000_000, kind, tags: [['h', CHANNEL]], content: '', sig: '0'.repeat(128), ...overrides };
}

function target(overrides: Partial<KindTarget> = {}): KindTarget {
  return { pubkey: AUTHOR, kind: 9, channelId: CHANNEL, authorOwner: null, ...overrides };
}

function diff(tags: string[][], content = '--- a\n+++ b\n'): NostrEvent {
  return event(40008, { tags: [['h', CHANNEL], ...tags], content });
}

describe('kind 0 profile', () => {
  it.each(['{}', '{"name":"alice"}', ' {"about":"x"} '])('accepts the JSON object %j', (content) => {
    expect(kindShapeError(event(0, { tags: [], content }))).toBeUndefined();
  });

  it.each(['', 'alice', '{"name":', '[]', '"name"', '42', 'null'])('refuses %j', (content) => {
    expect(kindShapeError(event(0, { tags: [], content }))?.wire).toBe('invalid: profile content must be a JSON object');
  });
});

describe('kind 40008 diff', () => {
  const good = [['repo', 'https://git.example.com/buzz.git'], ['commit', 'abc1234']];

  it('accepts a diff with an http(s) repo and a commit of at least 7 hex characters', () => {
    expect(kindShapeError(diff(good))).toBeUndefined();
    expect(kindShapeError(diff([['repo', 'http://git.local/x'], ['commit', 'A'.repeat(40)]]))).toBeUndefined();
  });

  it('accepts content of exactly the cap and refuses one byte more', () => {
    expect(kindShapeError(diff(good, 'x'.repeat(MAX_DIFF_CONTENT_BYTES)))).toBeUndefined();
    expect(kindShapeError(diff(good, 'x'.repeat(MAX_DIFF_CONTENT_BYTES + 1)))?.wire).toBe(
      `invalid: diff content exceeds maximum size of ${MAX_DIFF_CONTENT_BYTES} bytes (got ${MAX_DIFF_CONTENT_BYTES + 1})`,
    );
  });

  it('counts the cap in UTF-8 bytes', () => {
    expect(kindShapeError(diff(good, 'é'.repeat(MAX_DIFF_CONTENT_BYTES / 2 + 1)))?.wire).toMatch(/^invalid: diff content exceeds/);
  });

  it.each([
    ['no repo tag', [['commit', 'abc1234']]],
    ['an ssh repo', [['repo', 'ssh://git@example.com/x.git'], ['commit', 'abc1234']]],
    ['a scp-style repo', [['repo', 'git@example.com:x.git'], ['commit', 'abc1234']]],
    ['an empty repo value', [['repo', ''], ['commit', 'abc1234']]],
  ])('refuses %s', (_name, tags) => {
    expect(kindShapeError(diff(tags))?.wire).toBe('invalid: diff requires a repo tag with an http or https URL');
  });

  it.each([
    ['no commit tag', [['repo', 'https://x.example/r']]],
    ['a 6-character commit', [['repo', 'https://x.example/r'], ['commit', 'abc123']]],
    ['a non-hex commit', [['repo', 'https://x.example/r'], ['commit', 'main-branch']]],
  ])('refuses %s', (_name, tags) => {
    expect(kindShapeError(diff(tags))?.wire).toBe('invalid: diff requires a commit tag of at least 7 hex characters');
  });
});

describe('kind 40003 edit', () => {
  const edit = (pubkey: string, tags: string[][] = [['e', TARGET_ID]]) => event(40003, { pubkey, tags: [['h', CHANNEL], ...tags], content: 'fixed' });

  it('needs an e tag naming the edited message', () => {
    expect(kindShapeError(edit(AUTHOR, []))?.wire).toBe('invalid: edit must reference the edited message via e tag');
    expect(kindShapeError(edit(AUTHOR, [['e', 'not-hex']]))?.wire).toBe('invalid: edit must reference the edited message via e tag');
    expect(kindShapeError(edit(AUTHOR))).toBeUndefined();
  });

  it('uses the last 64-hex e tag as the target', () => {
    expect(kindTargetOf(edit(AUTHOR, [['e', OTHER_ID], ['e', TARGET_ID, '', 'reply'], ['e', 'short']]))).toBe(TARGET_ID);
  });

  it('lets the author edit', () => {
    expect(kindTargetError(edit(AUTHOR), CHANNEL, target())).toBeUndefined();
  });

  it("lets the recorded owner of the target's author edit", () => {
    expect(kindTargetError(edit(OWNER), CHANNEL, target({ authorOwner: OWNER }))).toBeUndefined();
  });

  it('refuses anyone else, including when the author has another owner', () => {
    const reason = 'restricted: only the author or its owner can edit a message';
    expect(kindTargetError(edit(STRANGER), CHANNEL, target())?.wire).toBe(reason);
    expect(kindTargetError(edit(STRANGER), CHANNEL, target({ authorOwner: OWNER }))?.wire).toBe(reason);
  });

  it('refuses a missing target and a target in another channel', () => {
    expect(kindTargetError(edit(AUTHOR), CHANNEL, undefined)?.wire).toBe('invalid: edited message not found');
    expect(kindTargetError(edit(AUTHOR), CHANNEL, target({ channelId: OTHER_CHANNEL }))?.wire).toBe("invalid: edit must be in the edited message's channel");
    expect(kindTargetError(edit(AUTHOR), CHANNEL, target({ channelId: null }))?.wire).toBe("invalid: edit must be in the edited message's channel");
  });
});

describe('kind 45002 forum vote', () => {
  const vote = (tags: string[][] = [['e', TARGET_ID]]) => event(45002, { pubkey: STRANGER, tags: [['h', CHANNEL], ...tags], content: '+' });
  const refusal = 'invalid: vote target must be a forum post or comment in the same channel';

  it('needs an e tag', () => {
    expect(kindShapeError(vote([]))?.wire).toBe('invalid: vote must reference a forum post or comment via e tag');
    expect(kindTargetOf(vote())).toBe(TARGET_ID);
  });

  it.each([45001, 45003])('accepts a vote on a kind %i in the same channel, by anyone', (kind) => {
    expect(kindTargetError(vote(), CHANNEL, target({ kind }))).toBeUndefined();
  });

  it.each([
    ['a missing target', undefined],
    ['a stream message', target({ kind: 9 })],
    ['another vote', target({ kind: 45002 })],
    ['a forum post in another channel', target({ kind: 45001, channelId: OTHER_CHANNEL })],
  ])('refuses %s', (_name, t) => {
    expect(kindTargetError(vote(), CHANNEL, t)?.wire).toBe(refusal);
  });
});

describe('other kinds', () => {
  it('need no target and pass unchanged', () => {
    const message = event(9, { tags: [['h', CHANNEL], ['e', TARGET_ID]] });
    expect(kindTargetOf(message)).toBeUndefined();
    expect(kindShapeError(message)).toBeUndefined();
    expect(kindTargetError(message, CHANNEL, undefined)).toBeUndefined();
  });
});
