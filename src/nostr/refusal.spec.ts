import { parseRefusal, Refusal, REFUSAL_CODES } from './refusal.js';

describe('Refusal', () => {
  it('renders NIP-01 reason text: the code, a colon, a space, the detail', () => {
    const refusal = new Refusal('invalid', 'bad signature');
    expect(refusal.wire).toBe('invalid: bad signature');
    expect(`${refusal}`).toBe('invalid: bad signature');
  });

  it('renders a refusal without detail as the bare code and colon (`duplicate:`)', () => {
    expect(new Refusal('duplicate', '').wire).toBe('duplicate:');
  });

  it.each(REFUSAL_CODES)('reads back what it rendered for %s', (code) => {
    for (const detail of ['', 'x', 'retry in 3s: later', ' leading space']) {
      expect(parseRefusal(new Refusal(code, detail).wire)).toEqual(new Refusal(code, detail));
    }
  });

  it('reads no code from a reason that has none', () => {
    for (const reason of ['', 'invalid', 'info: you have left this relay', 'invalid message: x', 'slow consumer: output buffer full']) {
      expect(parseRefusal(reason)).toBeUndefined();
    }
  });
});
