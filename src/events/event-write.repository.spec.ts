import { eventRowOnly } from './event-write.repository.js';
import { StoredEventInput } from './stored-event.js';

const CHANNEL = '11111111-1111-4111-8111-111111111111';
const REF = 'd'.repeat(64);
const PK = 'a'.repeat(64);

function item(over: Partial<StoredEventInput> & { tags?: string[][] } = {}): StoredEventInput {
  const { tags = [], ...rest } = over;
  return {
    event: { id: 'f'.repeat(64), pubkey: PK, created_at: 1_700_000_000, kind: 40100, tags, content: '', sig: '0'.repeat(128) },
    channelId: CHANNEL,
    dTag: null,
    thread: null,
    mentions: [],
    ...rest,
  };
}

describe('eventRowOnly (which batches EventWriter stores as one statement)', () => {
  it('holds for an event with no thread row, mention or e-tag ref, in a channel or not', () => {
    expect(eventRowOnly(item())).toBe(true);
    expect(eventRowOnly(item({ channelId: null }))).toBe(true);
    expect(eventRowOnly(item({ tags: [['h', CHANNEL], ['e', 'not-hex']] }))).toBe(true);
    // A placement without a channel writes no thread row (applyThreads skips it).
    expect(eventRowOnly(item({ channelId: null, thread: { parent: null, root: null, depth: 0 } }))).toBe(true);
  });

  it('fails for a thread row, a mention or an e-tag ref at any position', () => {
    expect(eventRowOnly(item({ thread: { parent: null, root: null, depth: 0 } }))).toBe(false);
    expect(eventRowOnly(item({ mentions: [PK] }))).toBe(false);
    expect(eventRowOnly(item({ tags: [['e', REF]] }))).toBe(false);
    expect(eventRowOnly(item({ tags: [['q', REF, 'e']] }))).toBe(false);
  });
});
