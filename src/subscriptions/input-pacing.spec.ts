import { jest } from '@jest/globals';
import { InputPacing } from './input-pacing.js';
import type { RelayConnection } from './relay-connection.js';

const KIB = 1024;

/** A connection whose socket records pause/resume; a clock that moves only when told. */
function setup(draining = false) {
  let t = 0;
  const calls: string[] = [];
  const conn = { isCancelled: false, ws: { pause: () => calls.push('pause'), resume: () => calls.push('resume') } } as unknown as RelayConnection;
  let paced = 0;
  const pacing = new InputPacing({ maxFrameBytes: 512 * KIB, draining: () => draining, paced: { inc: () => void (paced += 1) }, now: () => t });
  return { conn, calls, pacing, advance: (ms: number) => void (t += ms), paced: () => paced };
}

beforeEach(() => jest.useFakeTimers());
afterEach(() => jest.useRealTimers());

describe('InputPacing', () => {
  it('never pauses a client that stays within the rate, whatever its burst of small frames', () => {
    const s = setup();
    for (let second = 0; second < 60; second++) {
      for (let i = 0; i < 30; i++) expect(s.pacing.read(s.conn, 2 * KIB)).toBe(0);
      s.advance(1000);
    }
    expect(s.calls).toEqual([]);
  });

  it('stops reading a client past its burst and resumes it once the debt is repaid', () => {
    const s = setup();
    // Two 512 KiB frames are the burst; the third leaves 512 KiB of debt: two seconds at 256 KiB/s.
    expect(s.pacing.read(s.conn, 512 * KIB)).toBe(0);
    expect(s.pacing.read(s.conn, 512 * KIB)).toBe(0);
    expect(s.pacing.read(s.conn, 512 * KIB)).toBe(2000);
    expect(s.calls).toEqual(['pause']);
    s.advance(1999);
    jest.advanceTimersByTime(1999);
    expect(s.calls).toEqual(['pause']);
    s.advance(1);
    jest.advanceTimersByTime(1);
    expect(s.calls).toEqual(['pause', 'resume']);
    expect(s.paced()).toBe(1);
  });

  it('waits out frames read while the pause took effect before resuming', () => {
    const s = setup();
    s.pacing.read(s.conn, 1024 * KIB);
    expect(s.pacing.read(s.conn, 256 * KIB)).toBe(1000);
    // ws had already read one more frame: another second of debt, no second pause.
    expect(s.pacing.read(s.conn, 256 * KIB)).toBe(2000);
    s.advance(1000);
    jest.advanceTimersByTime(1000);
    expect(s.calls).toEqual(['pause']);
    s.advance(1000);
    jest.advanceTimersByTime(1000);
    expect(s.calls).toEqual(['pause', 'resume']);
    expect(s.paced()).toBe(1);
  });

  it('leaves a paced socket paused while the process drains (graceful shutdown owns it then)', () => {
    const s = setup(true);
    s.pacing.read(s.conn, 1536 * KIB);
    s.advance(5000);
    jest.advanceTimersByTime(5000);
    expect(s.calls).toEqual(['pause']);
  });
});
