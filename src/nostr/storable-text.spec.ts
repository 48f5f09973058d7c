import { unstorableText } from './storable-text.js';

describe('unstorableText', () => {
  it.each([
    ['a NUL', 'a\u0000b', 'a NUL character (U+0000)'],
    ['a NUL alone', '\u0000', 'a NUL character (U+0000)'],
    ['a lone high surrogate at the end', 'a\ud800', 'an unpaired surrogate (U+D800)'],
    ['a lone high surrogate before a letter', '\udbffx', 'an unpaired surrogate (U+DBFF)'],
    ['a lone low surrogate at the start', '\udc00b', 'an unpaired surrogate (U+DC00)'],
    ['a low surrogate after a complete pair', '\ud83d\ude00\ude00', 'an unpaired surrogate (U+DE00)'],
    ['two high surrogates in a row', '\ud83d\ud83d\ude00', 'an unpaired surrogate (U+D83D)'],
    ['a reversed pair', '\ude00\ud83d', 'an unpaired surrogate (U+DE00)'],
  ])('finds %s', (_label, text, found) => {
    expect(unstorableText(text)).toBe(found);
  });

  it.each([
    ['empty text', ''],
    ['ASCII', 'hello'],
    ['an emoji (a surrogate pair)', '\ud83d\ude00'],
    ['the last code point', '\u{10ffff}'],
    ['adjacent pairs', '\u{1f600}\u{1f44d}\u{1f3fd}'],
    ['a ZWJ sequence', '\u{1f468}\u200d\u{1f469}\u200d\u{1f467}'],
    ['noncharacters', '\ufffe\uffff\ufdd0'],
    ['the replacement character itself', '\ufffd'],
    ['C0 controls other than NUL and DEL', '\u0001\u001f\u007f\t\n'],
    ['line and paragraph separators and a BOM', '\u2028\u2029\ufeff'],
    ['combining marks and RTL text', 'e\u0301 \u05e9\u05dc\u05d5\u05dd'],
  ])('passes %s', (_label, text) => {
    expect(unstorableText(text)).toBeNull();
  });
});
