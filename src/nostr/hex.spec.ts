import { bufToHex, hexToBuf, isHex128, isHex64, lowerHex64 } from './hex.js';

describe('hex helpers', () => {
  it('isHex64 accepts exactly 64 lowercase hex characters', () => {
    expect(isHex64('0123456789abcdef'.repeat(4))).toBe(true);
    expect(isHex64('A'.repeat(64))).toBe(false);
    expect(isHex64('a'.repeat(63))).toBe(false);
    expect(isHex64('a'.repeat(65))).toBe(false);
    expect(isHex64(`${'a'.repeat(64)}\n`)).toBe(false);
    expect(isHex64(42)).toBe(false);
  });

  it('lowerHex64 takes 64 hex characters in either case and gives them lowercase', () => {
    const mixed = '0123456789ABCDEFabcdef'.repeat(3).slice(0, 64);
    expect(lowerHex64(mixed)).toBe(mixed.toLowerCase());
    expect(lowerHex64('a'.repeat(64))).toBe('a'.repeat(64));
    for (const bad of ['A'.repeat(63), 'A'.repeat(65), `${'a'.repeat(64)}\n`, 'g'.repeat(64), 42, undefined]) {
      expect(lowerHex64(bad)).toBeUndefined();
    }
  });

  it('isHex128 accepts exactly 128 lowercase hex characters', () => {
    expect(isHex128('f'.repeat(128))).toBe(true);
    expect(isHex128('f'.repeat(127))).toBe(false);
    expect(isHex128('F'.repeat(128))).toBe(false);
  });

  it('round-trips bytes through hex', () => {
    const bytes = Uint8Array.from([0, 1, 0x7f, 0x80, 0xff]);
    expect(bufToHex(bytes)).toBe('00017f80ff');
    expect([...hexToBuf('00017f80ff')]).toEqual([...bytes]);
    expect(hexToBuf('ABcd')).toEqual(Buffer.from([0xab, 0xcd]));
  });

  it('encodes only the viewed slice of a larger buffer', () => {
    const view = new Uint8Array(Uint8Array.from([1, 2, 3, 4]).buffer, 1, 2);
    expect(bufToHex(view)).toBe('0203');
  });

  it.each([['abc'], ['zz'], ['0x00']])('hexToBuf rejects %p instead of truncating', (bad) => {
    expect(() => hexToBuf(bad)).toThrow(TypeError);
  });
});
