import { hostHeader, hostWithoutPort, normalizeHost } from './host.js';

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

  it.each([
    ['localhost:33000@other.test', 'userinfo'],
    ['x@localhost', 'userinfo'],
    ['*', 'a wildcard'],
    ['\uff4cocalhost', 'a full-width letter'],
    [':33000', 'a port without a name'],
    ['evil\u0001.test', 'a control character'],
    ['a b.test', 'a space'],
    ['localhost:0', 'port 0'],
    ['localhost:70000', 'a port past 65535'],
    ['localhost:33000:1', 'two ports'],
    ['a..b', 'an empty label'],
    ['[::1', 'an unclosed IPv6 literal'],
  ])('refuses %j (%s)', (raw) => {
    expect(normalizeHost(raw)).toBeUndefined();
  });

  it('keeps names with digits, hyphens and underscores, IPv4 and IPv6 literals', () => {
    expect(normalizeHost('relay-1.example_test.org')).toBe('relay-1.example_test.org');
    expect(normalizeHost('127.0.0.1:3000')).toBe('127.0.0.1:3000');
    expect(normalizeHost('[2001:db8::1]:8080')).toBe('[2001:db8::1]:8080');
  });
});

describe('hostHeader', () => {
  it('reads the one Host header, whatever its case', () => {
    expect(hostHeader(['Accept', '*/*', 'HOST', 'localhost:3000'])).toBe('localhost:3000');
    expect(hostHeader(['Accept', '*/*'])).toBeUndefined();
  });

  it('answers no host when Host is sent twice (RFC 9112 §3.2)', () => {
    expect(normalizeHost(hostHeader(['Host', 'localhost', 'host', 'other.test']))).toBeUndefined();
  });
});
