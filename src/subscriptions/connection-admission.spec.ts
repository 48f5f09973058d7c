import { loadConfig } from '../config/app-config.js';
import { ConnectionAdmission, ConnectionTicket, RESERVE_PER_ADDRESS } from './connection-admission.service.js';

const admissionWith = (env: NodeJS.ProcessEnv) => new ConnectionAdmission(loadConfig(env));
const isTicket = (t: ConnectionTicket | string): t is ConnectionTicket => typeof t === 'object';

describe('ConnectionAdmission', () => {
  it('admits an address up to its limit, refuses the next as ip_limit while another address is admitted, and frees a place on release', () => {
    const a = admissionWith({ BUZZ_MAX_CONNECTIONS_PER_IP: '3' });
    const held = [a.admit('198.51.100.1'), a.admit('198.51.100.1'), a.admit('198.51.100.1')];
    expect(held.every(isTicket)).toBe(true);
    expect(a.admit('198.51.100.1')).toBe('ip_limit');
    expect(isTicket(a.admit('198.51.100.2'))).toBe(true);
    const first = held[0] as ConnectionTicket;
    first.release();
    first.release(); // idempotent: one place back, not two
    expect(isTicket(a.admit('198.51.100.1'))).toBe(true);
    expect(a.admit('198.51.100.1')).toBe('ip_limit');
    expect(a.connections).toBe(4);
  });

  it('keeps the reserve for addresses holding few sockets: one that filled the rest is refused, a new address is admitted until the cap', () => {
    const a = admissionWith({ BUZZ_MAX_CONNECTIONS: '20', BUZZ_CONNECTION_RESERVE: '6', BUZZ_MAX_CONNECTIONS_PER_IP: '100' });
    for (let i = 0; i < 14; i++) expect(isTicket(a.admit('flood'))).toBe(true);
    expect(a.admit('flood')).toBe('capacity');
    // Each newcomer gets reserved places while it holds fewer than RESERVE_PER_ADDRESS.
    for (let i = 0; i < RESERVE_PER_ADDRESS; i++) expect(isTicket(a.admit('newcomer'))).toBe(true);
    expect(a.admit('newcomer')).toBe('capacity');
    expect(isTicket(a.admit('other-1'))).toBe(true);
    expect(isTicket(a.admit('other-2'))).toBe(true);
    // The cap itself holds for everyone.
    expect(a.connections).toBe(20);
    expect(a.admit('other-3')).toBe('capacity');
  });

  it('counts authenticated sockets per key: the one past the limit is not counted, and a release lets the next in', () => {
    const a = admissionWith({ BUZZ_MAX_CONNECTIONS_PER_KEY: '2' });
    expect([a.claimKey('k'), a.claimKey('k'), a.claimKey('k'), a.claimKey('other')]).toEqual([true, true, false, true]);
    a.releaseKey('k');
    expect(a.claimKey('k')).toBe(true);
    expect(a.claimKey('k')).toBe(false);
  });
});
