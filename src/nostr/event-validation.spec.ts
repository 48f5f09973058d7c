import { createHash } from 'node:crypto';
import { finalizeEvent, generateSecretKey, getEventHash } from 'nostr-tools/pure';
import { computeEventId } from './event-id.js';
import { NostrEvent } from './nostr.types.js';
import {
  D_TAG_MAX_LEN,
  MAX_CONTENT_BYTES,
  MAX_TAG_ELEMENT_BYTES,
  MAX_TAG_ELEMENTS,
  MAX_TAGS,
  checkEventLimits,
  checkStorableText,
  parseEvent,
} from './event-validation.js';
import { parseRefusal } from './refusal.js';

/** A refused check, its reason pinned as the client reads it. */
const refused = (reason: string) => ({ ok: false, reason: parseRefusal(reason) });

const HEX64 = 'a'.repeat(64);
const SIG = 'b'.repeat(128);
const NOW = 1_700_000_000;

function rawEvent(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return { id: HEX64, pubkey: HEX64, created_at: NOW, kind: 9, tags: [['h', 'x']], content: 'hi', sig: SIG, ...overrides };
}

function event(overrides: Partial<NostrEvent> = {}): NostrEvent {
  return { ...(rawEvent() as unknown as NostrEvent), ...overrides };
}

/** Deterministic PRNG (mulberry32) so a failing random case can be replayed. */
function prng(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const SPECIAL_CHARS = [
  '\u0000', '\u0001', '\u0008', '\t', '\n', '\u000b', '\u000c', '\r', '\u001f', '"', '\\', '/', '\u007f',
  '\u0080', '\u00e9', '\u2028', '\u2029', '\ufeff', '\ud83d\ude00', '\ud800', '\udfff', '€', '中', ' ',
];

function randomText(rand: () => number, maxLen: number): string {
  const len = Math.floor(rand() * maxLen);
  let out = '';
  for (let i = 0; i < len; i++) {
    const pick = rand();
    if (pick < 0.4) out += SPECIAL_CHARS[Math.floor(rand() * SPECIAL_CHARS.length)];
    else if (pick < 0.8) out += String.fromCharCode(0x20 + Math.floor(rand() * 0x5f));
    else out += String.fromCodePoint(Math.floor(rand() * 0x10ffff) & ~0x800); // avoid most surrogates
  }
  return out;
}

describe('parseEvent', () => {
  it('accepts a well-formed event and keeps only the NIP-01 fields', () => {
    const result = parseEvent({ ...rawEvent(), extra: 'dropped', seenOn: ['wss://x'] });
    expect(result).toEqual({ ok: true, event: rawEvent() });
  });

  it.each([
    ['a non-object', 'not an event', 'invalid: event must be a JSON object'],
    ['null', null, 'invalid: event must be a JSON object'],
    ['an array', [], 'invalid: event must be a JSON object'],
  ])('rejects %s', (_label, raw, reason) => {
    expect(parseEvent(raw)).toEqual(refused(reason));
  });

  const ID = 'invalid: id must be 64 lowercase hex characters';
  const PUBKEY = 'invalid: pubkey must be 64 lowercase hex characters';
  const SIGR = 'invalid: sig must be 128 lowercase hex characters';
  const CREATED = 'invalid: created_at must be a non-negative integer';
  const KIND = 'invalid: kind must be an integer between 0 and 65535';
  const TAGS = 'invalid: tags must be an array of arrays of strings';
  it.each<[string, Record<string, unknown>, string]>([
    ['missing id', { id: undefined }, ID],
    ['short id', { id: 'a'.repeat(63) }, ID],
    ['uppercase id', { id: 'A'.repeat(64) }, ID],
    ['non-hex id', { id: 'g'.repeat(64) }, ID],
    ['numeric pubkey', { pubkey: 1 }, PUBKEY],
    ['uppercase pubkey', { pubkey: 'F'.repeat(64) }, PUBKEY],
    ['short sig', { sig: 'b'.repeat(127) }, SIGR],
    ['uppercase sig', { sig: 'B'.repeat(128) }, SIGR],
    ['fractional created_at', { created_at: 1.5 }, CREATED],
    ['negative created_at', { created_at: -1 }, CREATED],
    ['string created_at', { created_at: '1700000000' }, CREATED],
    ['unsafe created_at', { created_at: 2 ** 53 }, CREATED],
    ['kind above 65535', { kind: 65_536 }, KIND],
    ['negative kind', { kind: -1 }, KIND],
    ['fractional kind', { kind: 9.5 }, KIND],
    ['tags not an array', { tags: {} }, TAGS],
    ['a tag that is not an array', { tags: ['e'] }, TAGS],
    ['a non-string tag element', { tags: [['e', 1]] }, TAGS],
    ['null tags', { tags: null }, TAGS],
    ['non-string content', { content: 5 }, 'invalid: content must be a string'],
  ])('rejects %s', (_label, overrides, reason) => {
    expect(parseEvent(rawEvent(overrides))).toEqual(refused(reason));
  });

  it('accepts boundary values: kind 0 and 65535, created_at 0, empty tags and an empty tag', () => {
    expect(parseEvent(rawEvent({ kind: 0, created_at: 0, tags: [] })).ok).toBe(true);
    expect(parseEvent(rawEvent({ kind: 65_535, tags: [[]] })).ok).toBe(true);
  });
});

describe('computeEventId', () => {
  it('matches nostr-tools for events it signed', () => {
    const sk = generateSecretKey();
    for (const content of ['', 'hello', 'line\nbreak "quoted" \\ tab\t', '😀 ünïcödé \u2028']) {
      const ev = finalizeEvent({ kind: 9, created_at: NOW, tags: [['h', 'room'], ['p', HEX64, '', 'mention']], content }, sk);
      expect(computeEventId(ev)).toBe(ev.id);
    }
  });

  it('matches nostr-tools getEventHash on random unicode and control-character content', () => {
    const rand = prng(0xb022);
    for (let i = 0; i < 500; i++) {
      const ev = {
        pubkey: HEX64,
        created_at: Math.floor(rand() * 2 ** 40),
        kind: Math.floor(rand() * 65_536),
        tags: [[randomText(rand, 4), randomText(rand, 20)], ['e', HEX64, randomText(rand, 8)]],
        content: randomText(rand, 200),
      };
      expect({ i, id: computeEventId(ev) }).toEqual({ i, id: getEventHash(ev) });
    }
  });

  it('serialises with the NIP-01 escapes and no whitespace', () => {
    const ev = { pubkey: HEX64, created_at: 1, kind: 1, tags: [], content: '\n"\\\r\t\b\f\u0001\u2028é' };
    // The hash of the exact bytes NIP-01 prescribes.
    const expected = '[0,"' + HEX64 + '",1,1,[],"\\n\\"\\\\\\r\\t\\b\\f\\u0001\u2028é"]';
    expect(computeEventId(ev)).toBe(createHash('sha256').update(expected, 'utf8').digest('hex'));
  });
});

describe('checkEventLimits', () => {
  it('accepts created_at exactly 900 s either side of now and rejects 901', () => {
    expect(checkEventLimits(event({ created_at: NOW + 900 }), NOW)).toEqual({ ok: true });
    expect(checkEventLimits(event({ created_at: NOW - 900 }), NOW)).toEqual({ ok: true });
    for (const created_at of [NOW + 901, NOW - 901, 0]) {
      expect(checkEventLimits(event({ created_at }), NOW)).toEqual(
        refused('invalid: event timestamp too far from server time'),
      );
    }
  });

  it('caps content at 262144 UTF-8 bytes and reports the size', () => {
    expect(checkEventLimits(event({ content: 'x'.repeat(MAX_CONTENT_BYTES) }), NOW)).toEqual({ ok: true });
    expect(checkEventLimits(event({ content: 'x'.repeat(MAX_CONTENT_BYTES + 1) }), NOW)).toEqual(
      refused('invalid: content exceeds maximum size of 262144 bytes (got 262145)'),
    );
    // 131,073 two-byte characters: under the cap in UTF-16 units, over it in bytes.
    expect(checkEventLimits(event({ content: 'é'.repeat(131_073) }), NOW)).toEqual(
      refused('invalid: content exceeds maximum size of 262144 bytes (got 262146)'),
    );
  });

  it('caps the number of tags', () => {
    const tags = (n: number) => Array.from({ length: n }, () => ['t', 'x']);
    expect(checkEventLimits(event({ tags: tags(MAX_TAGS) }), NOW)).toEqual({ ok: true });
    expect(checkEventLimits(event({ tags: tags(MAX_TAGS + 1) }), NOW)).toEqual(
      refused('invalid: too many tags (got 2001, maximum is 2000)'),
    );
  });

  it('caps elements per tag and bytes per element', () => {
    const wide = (n: number) => [Array.from({ length: n }, () => 'v')];
    expect(checkEventLimits(event({ tags: wide(MAX_TAG_ELEMENTS) }), NOW)).toEqual({ ok: true });
    expect(checkEventLimits(event({ tags: wide(MAX_TAG_ELEMENTS + 1) }), NOW)).toEqual(
      refused('invalid: tag has too many elements (got 101, maximum is 100)'),
    );
    expect(checkEventLimits(event({ tags: [['t', 'x'.repeat(MAX_TAG_ELEMENT_BYTES)]] }), NOW)).toEqual({ ok: true });
    expect(checkEventLimits(event({ tags: [['t', 'x'.repeat(MAX_TAG_ELEMENT_BYTES + 1)]] }), NOW)).toEqual(
      refused('invalid: tag element exceeds maximum size of 65536 bytes'),
    );
  });

  it('caps the first d tag at 1024 bytes for addressable kinds only', () => {
    const d = (len: number) => [['d', 'x'.repeat(len)]];
    expect(checkEventLimits(event({ kind: 30_023, tags: d(D_TAG_MAX_LEN) }), NOW)).toEqual({ ok: true });
    expect(checkEventLimits(event({ kind: 30_023, tags: d(D_TAG_MAX_LEN + 1) }), NOW)).toEqual(
      refused('invalid: d tag too long'),
    );
    expect(checkEventLimits(event({ kind: 39_999, tags: [['d', 'é'.repeat(513)]] }), NOW).ok).toBe(false);
    expect(checkEventLimits(event({ kind: 9, tags: d(D_TAG_MAX_LEN + 1) }), NOW)).toEqual({ ok: true });
    expect(checkEventLimits(event({ kind: 30_000, tags: [['d', 'key'], ...d(D_TAG_MAX_LEN + 1)] }), NOW)).toEqual({
      ok: true,
    });
  });

  it('checks the timestamp before the content size', () => {
    const ev = event({ created_at: 0, content: 'x'.repeat(MAX_CONTENT_BYTES + 1) });
    expect(checkEventLimits(ev, NOW)).toEqual(refused('invalid: event timestamp too far from server time'));
  });
});

describe('checkStorableText', () => {
  const CANNOT = 'which the relay cannot store';

  it.each<[string, Partial<NostrEvent>, string]>([
    ['a lone high surrogate in content', { content: 'a\ud800' }, `invalid: content contains an unpaired surrogate (U+D800), ${CANNOT}`],
    ['a lone low surrogate in content', { content: '\udc00b' }, `invalid: content contains an unpaired surrogate (U+DC00), ${CANNOT}`],
    ['a NUL in content', { content: 'a\u0000' }, `invalid: content contains a NUL character (U+0000), ${CANNOT}`],
    ['a lone surrogate in a tag value', { tags: [['h', 'x'], ['t', 'a\ud800']] }, `invalid: tags[1][1] contains an unpaired surrogate (U+D800), ${CANNOT}`],
    ['a lone surrogate in a tag name', { tags: [['\udfff', 'x']] }, `invalid: tags[0][0] contains an unpaired surrogate (U+DFFF), ${CANNOT}`],
    ['a NUL in a later tag element', { tags: [['imeta', 'url x', 'm \u0000']] }, `invalid: tags[0][2] contains a NUL character (U+0000), ${CANNOT}`],
  ])('refuses %s and says where', (_label, overrides, reason) => {
    expect(checkStorableText(event(overrides))).toEqual(refused(reason));
  });

  it('accepts astral characters, noncharacters, controls and separators anywhere', () => {
    const edge = '\u{1f600} \u{1f468}\u200d\u{1f469} \u{10ffff} \ufffe\uffff \ufffd \u0001\u001f\u007f \u2028\u2029 \ufeff e\u0301';
    expect(checkStorableText(event({ content: edge, tags: [[edge, edge, edge]] }))).toEqual({ ok: true });
  });

  it('accepts exactly the random texts that survive UTF-8 (as pg sends them) and hold no NUL', () => {
    const rand = prng(7);
    for (let i = 0; i < 500; i++) {
      const text = randomText(rand, 40);
      const clean = Buffer.from(text, 'utf8').toString('utf8') === text && !text.includes('\u0000');
      expect(checkStorableText(event({ content: text, tags: [['t', text]] })).ok).toBe(clean);
    }
  });
});
