import { StoredEvent, eventJson, type EventTextRow } from './stored-event.js';

const HEX = 'ab'.repeat(32);
const SIG = 'cd'.repeat(64);

/** A row as the hot path gets it: tags as Postgres prints jsonb (space after commas, its escapes). */
function row(tagsText: string, content: string): EventTextRow {
  return { id: HEX, pubkey: HEX, created_at: '1700000000', kind: 1, tags: tagsText, content, sig: SIG };
}

describe('StoredEvent', () => {
  const tricky = [
    ['t', 'say "hi"'],
    ['x', 'back\\slash', 'tab\tnew\nline'],
    ['u', 'é ü 😀 \u2028'],
  ];
  // What Postgres prints for that jsonb value.
  const printed = '[["t", "say \\"hi\\""], ["x", "back\\\\slash", "tab\\tnew\\nline"], ["u", "é ü 😀 \u2028"]]';
  const content = 'line 1\nline "2" \\ \u0001 😀';

  it('builds the same event JSON.parse would give for a plain event', () => {
    const ev = new StoredEvent(row(printed, content));
    const plain = { id: HEX, pubkey: HEX, created_at: 1700000000, kind: 1, tags: tricky, content, sig: SIG };
    expect(JSON.parse(ev.toWire())).toEqual(plain);
    expect(JSON.parse(eventJson(ev))).toEqual(plain);
    expect(ev.tags).toEqual(tricky);
  });

  it('serialises through JSON.stringify as a plain event (toJSON), with keys in NIP-01 order', () => {
    const ev = new StoredEvent(row(printed, content));
    const plain = { id: HEX, pubkey: HEX, created_at: 1700000000, kind: 1, tags: tricky, content, sig: SIG };
    expect(JSON.stringify(ev)).toBe(JSON.stringify(plain));
    expect(Object.keys(JSON.parse(ev.toWire()))).toEqual(['id', 'pubkey', 'created_at', 'kind', 'tags', 'content', 'sig']);
  });

  it('serialises other events with JSON.stringify', () => {
    const plain = { id: HEX, pubkey: HEX, created_at: 1, kind: 7, tags: [['e', HEX]], content: '+', sig: SIG };
    expect(eventJson(plain)).toBe(JSON.stringify(plain));
  });
});
