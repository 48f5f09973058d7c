import { jest } from '@jest/globals';
import { holdInput, releaseInput } from './input-holds.js';
import { BURST_SECONDS, PreAuthInput, RELEASE_BYTES } from './preauth-input.js';
import type { RelayConnection } from './relay-connection.js';

const KIB = 1024;
const RATE = 64 * KIB;

/** Connections whose sockets record pause/resume; a clock that moves only when told. */
function setup(opts: { rate?: number; draining?: boolean } = {}) {
  let t = 0;
  const log: string[] = [];
  let waiting = 0;
  let paced = 0;
  const gate = new PreAuthInput({
    bytesPerSecond: opts.rate ?? RATE,
    draining: () => opts.draining ?? false,
    paced: { inc: () => void (paced += 1) },
    waiting: { inc: () => void (waiting += 1), dec: () => void (waiting -= 1) },
    now: () => t,
  });
  const conn = (name: string) => {
    const c = { isCancelled: false, ws: { pause: () => log.push(`${name} pause`), resume: () => log.push(`${name} resume`) } };
    return c as unknown as RelayConnection;
  };
  const advance = (ms: number) => {
    t += ms;
    jest.advanceTimersByTime(ms);
  };
  return { gate, conn, log, advance, waiting: () => waiting, paced: () => paced };
}

beforeEach(() => jest.useFakeTimers());
afterEach(() => jest.useRealTimers());

describe('PreAuthInput', () => {
  it('never stops a crowd behind one address that sends a little before AUTH', () => {
    const s = setup();
    // A hundred clients behind one NAT, each a 1 KiB REQ before its AUTH: well inside the burst.
    for (let i = 0; i < 100; i++) {
      const c = s.conn(`c${i}`);
      s.gate.opened(c, '192.0.2.1');
      s.gate.charge(c, KIB);
      s.gate.leave(c);
    }
    expect(s.log).toEqual([]);
    expect(s.paced()).toBe(0);
  });

  it("stops reading one address past its budget, holds its new connections before their first read, and reads another address as before", () => {
    const s = setup();
    const flood = s.conn('flood');
    s.gate.opened(flood, '203.0.113.7');
    s.gate.charge(flood, BURST_SECONDS * RATE);
    expect(s.log).toEqual([]);
    s.gate.charge(flood, 8 * KIB);
    expect(s.log).toEqual(['flood pause']);

    const next = s.conn('next');
    s.gate.opened(next, '203.0.113.7');
    expect(s.log).toEqual(['flood pause', 'next pause']);

    const other = s.conn('other');
    s.gate.opened(other, '198.51.100.1');
    s.gate.charge(other, 16 * KIB);
    expect(s.log).toEqual(['flood pause', 'next pause']);
    expect(s.waiting()).toBe(2);
    expect(s.paced()).toBe(2);
  });

  it('lets waiting connections read again in arrival order, one per RELEASE_BYTES of refill', () => {
    const s = setup();
    const first = s.conn('first');
    s.gate.opened(first, 'a');
    s.gate.charge(first, BURST_SECONDS * RATE + 1);
    const second = s.conn('second');
    s.gate.opened(second, 'a');
    s.log.length = 0;
    // 1 byte of debt: repaid within a millisecond, then `first` reads again, charged RELEASE_BYTES.
    s.advance(1);
    expect(s.log).toEqual(['first resume']);
    // `second` waits for those RELEASE_BYTES to be repaid.
    s.advance(Math.floor((RELEASE_BYTES / RATE) * 1000) - 2);
    expect(s.log).toEqual(['first resume']);
    s.advance(2);
    expect(s.log).toEqual(['first resume', 'second resume']);
    expect(s.waiting()).toBe(0);
  });

  it('lets a waiting connection go at once when it authenticates or closes, and skips it later', () => {
    const s = setup();
    const a = s.conn('a');
    s.gate.opened(a, 'x');
    s.gate.charge(a, BURST_SECONDS * RATE + 10 * KIB);
    const b = s.conn('b');
    s.gate.opened(b, 'x');
    s.gate.leave(a);
    expect(s.log).toEqual(['a pause', 'b pause', 'a resume']);
    expect(s.waiting()).toBe(1);
    s.advance(1000);
    expect(s.log).toEqual(['a pause', 'b pause', 'a resume', 'b resume']);
    // Charged after leaving: not counted against the address.
    s.gate.charge(a, 100 * RATE);
    expect(s.log).toHaveLength(4);
  });

  it('remembers an address in debt after its last connection closes, so reconnecting starts no fresher', () => {
    const s = setup();
    const a = s.conn('a');
    s.gate.opened(a, 'x');
    s.gate.charge(a, BURST_SECONDS * RATE + 2 * RATE);
    s.gate.leave(a);
    // The debt is repaid after 2 s; the bucket is still nearly empty then.
    s.advance(2100);
    expect(s.gate.trackedAddresses).toBe(1);
    const again = s.conn('again');
    s.gate.opened(again, 'x');
    s.gate.charge(again, 32 * KIB);
    expect(s.log).toEqual(['a pause', 'a resume', 'again pause']);
    s.gate.leave(again);
    // Debt repaid and the bucket full again: forgotten.
    s.advance((BURST_SECONDS + 2) * 1000);
    expect(s.gate.trackedAddresses).toBe(0);
  });

  it('does nothing at rate 0', () => {
    const s = setup({ rate: 0 });
    const a = s.conn('a');
    s.gate.opened(a, 'x');
    s.gate.charge(a, 1024 * 1024 * KIB);
    expect(s.log).toEqual([]);
    expect(s.gate.trackedAddresses).toBe(0);
  });

  it('leaves waiting sockets paused while the process drains', () => {
    const s = setup({ draining: true });
    const a = s.conn('a');
    s.gate.opened(a, 'x');
    s.gate.charge(a, BURST_SECONDS * RATE + 1);
    s.advance(10_000);
    expect(s.log).toEqual(['a pause']);
  });

  it('a socket held also by its own input pacing is read again only when both let go', () => {
    const s = setup();
    const a = s.conn('a');
    s.gate.opened(a, 'x');
    holdInput(a, 'pacing');
    s.gate.charge(a, BURST_SECONDS * RATE + 1);
    s.advance(1);
    expect(s.log).toEqual(['a pause']);
    releaseInput(a, 'pacing');
    expect(s.log).toEqual(['a pause', 'a resume']);
  });
});
