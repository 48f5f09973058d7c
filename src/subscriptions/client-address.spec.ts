import type { IncomingMessage } from 'node:http';
import { ClientAddresses, limitKey } from './client-address.js';

function request(peer: string, forwardedFor?: string): IncomingMessage {
  return { socket: { remoteAddress: peer }, headers: forwardedFor === undefined ? {} : { 'x-forwarded-for': forwardedFor } } as unknown as IncomingMessage;
}

describe('the address a connection counts under', () => {
  it('is the socket peer when no proxy is trusted, whatever X-Forwarded-For says, and says once that the header was ignored', () => {
    const ignored: string[] = [];
    const addresses = new ClientAddresses([], (peer) => ignored.push(peer));
    expect(addresses.of(request('203.0.113.7', '198.51.100.1'))).toBe('203.0.113.7');
    expect(addresses.of(request('203.0.113.8', '198.51.100.2'))).toBe('203.0.113.8');
    expect(ignored).toEqual(['203.0.113.7']);
  });

  it("is the nearest untrusted X-Forwarded-For hop when the peer is a trusted proxy, and the peer itself when it is not", () => {
    const addresses = new ClientAddresses(['10.0.0.0/8']);
    expect(addresses.of(request('10.1.2.3', '198.51.100.1'))).toBe('198.51.100.1');
    // A client that forges a first hop is still counted under the address the proxy saw.
    expect(addresses.of(request('10.1.2.3', '1.1.1.1, 198.51.100.1'))).toBe('198.51.100.1');
    // Proxies in a chain are skipped while trusted.
    expect(addresses.of(request('10.1.2.3', '198.51.100.1, 10.9.9.9'))).toBe('198.51.100.1');
    // A direct client is not a proxy: its header is not believed.
    expect(addresses.of(request('203.0.113.7', '198.51.100.1'))).toBe('203.0.113.7');
    expect(addresses.of(request('10.1.2.3'))).toBe('10.1.2.3');
  });

  it('counts an IPv4-mapped peer as IPv4 and an IPv6 address by its /64', () => {
    expect(limitKey('::ffff:127.0.0.2')).toBe('127.0.0.2');
    expect(limitKey('2001:db8:1:2:aaaa::1')).toBe('2001:db8:1:2::/64');
    expect(limitKey('2001:db8:1:2:ffff:ffff:ffff:ffff')).toBe('2001:db8:1:2::/64');
    expect(limitKey('2001:db8:1:3::1')).toBe('2001:db8:1:3::/64');
    expect(limitKey('')).toBe('');
  });
});
