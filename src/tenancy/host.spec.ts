import { hostWithoutPort, normalizeHost } from './host.js';

describe('normalizeHost', () => {
  it.each([
    ['Example.COM', 'example.com'],
    ['example.com.', 'example.com'],
    ['example.com:443', 'example.com'],
    ['example.com:80', 'example.com'],
    ['example.com:3000', 'example.com:3000'],
    ['example.com.:3000', 'example.com:3000'],
    ['[::1]:3000', '[::1]:3000'],
    ['[::1]:443', '[::1]'],
  ])('%s -> %s', (raw, expected) => {
    expect(normalizeHost(raw)).toBe(expected);
  });

  it('rejects an empty host', () => {
    expect(normalizeHost('')).toBeUndefined();
    expect(normalizeHost('   ')).toBeUndefined();
    expect(normalizeHost(undefined)).toBeUndefined();
  });

  it('strips ports for lookup', () => {
    expect(hostWithoutPort('localhost:3000')).toBe('localhost');
    expect(hostWithoutPort('[::1]:3000')).toBe('[::1]');
    expect(hostWithoutPort('example.com')).toBe('example.com');
  });
});
