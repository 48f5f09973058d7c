import { jest } from '@jest/globals';
import { loadConfig } from '../config/app-config.js';
import { HANDLER_WAIT_MS, HANDLER_WAITING_PER_SLOT, HandlerGate } from './handler-gate.js';

describe('HandlerGate', () => {
  it('admits reads up to the configured number of handlers and refuses the rest without running them', async () => {
    const gate = new HandlerGate(loadConfig({ BUZZ_MAX_CONCURRENT_HANDLERS: '2' }));
    const releases: Array<() => void> = [];
    const hold = () => new Promise<void>((resolve) => releases.push(resolve));
    const first = gate.runRead(hold);
    const second = gate.runRead(hold);
    let ranThird = false;
    const third = await gate.runRead(async () => {
      ranThird = true;
    });
    expect(third).toEqual({ admitted: false, refusal: 'capacity' });
    expect(ranThird).toBe(false);
    releases.forEach((r) => r());
    await expect(first).resolves.toEqual({ admitted: true, value: undefined });
    await second;
    await expect(gate.runRead(async () => 7)).resolves.toEqual({ admitted: true, value: 7 });
  });

  it('frees the slot when a handler throws', async () => {
    const gate = new HandlerGate(loadConfig({ BUZZ_MAX_CONCURRENT_HANDLERS: '1' }));
    await expect(gate.run(async () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    await expect(gate.run(async () => 'ok')).resolves.toEqual({ admitted: true, value: 'ok' });
  });

  it('reads hold at most the budget; EVENT is still admitted into an eighth more that reads never take', async () => {
    const gate = new HandlerGate(loadConfig({ BUZZ_MAX_CONCURRENT_HANDLERS: '16' }));
    expect(gate.eventCapacity).toBe(18);
    const releases: Array<() => void> = [];
    const hold = () => new Promise<void>((resolve) => releases.push(resolve));
    const reads = Array.from({ length: 16 }, () => gate.runRead(hold));
    expect(await gate.runRead(async () => 'read')).toEqual({ admitted: false, refusal: 'capacity' });
    await expect(gate.run(async () => 'event')).resolves.toEqual({ admitted: true, value: 'event' });
    const events = [gate.run(hold), gate.run(hold)];
    expect(await gate.run(async () => 'event')).toEqual({ admitted: false, refusal: 'capacity' });
    releases.forEach((r) => r());
    await Promise.all([...reads, ...events]);
    expect(gate.inFlight).toBe(0);
  });

  it('admits no read while EVENTs hold the whole budget', async () => {
    const gate = new HandlerGate(loadConfig({ BUZZ_MAX_CONCURRENT_HANDLERS: '2' }));
    const releases: Array<() => void> = [];
    const hold = () => new Promise<void>((resolve) => releases.push(resolve));
    const events = [gate.run(hold), gate.run(hold)];
    expect(await gate.runRead(async () => 'read')).toEqual({ admitted: false, refusal: 'capacity' });
    releases.forEach((r) => r());
    await Promise.all(events);
    expect(new HandlerGate(loadConfig({ BUZZ_MAX_CONCURRENT_HANDLERS: '1024' })).eventCapacity).toBe(1152);
  });

  it("one key's reads hold at most its share of the budget; the next is refused for the key while another key's is admitted", async () => {
    const gate = new HandlerGate(loadConfig({ BUZZ_MAX_CONCURRENT_HANDLERS: '8', BUZZ_KEY_SHARE_PERCENT: '25' }));
    expect(gate.keyShare).toBe(2);
    const releases: Array<() => void> = [];
    const hold = () => new Promise<void>((resolve) => releases.push(resolve));
    const held = [gate.runRead(hold, 'flood'), gate.runRead(hold, 'flood')];
    expect(await gate.runRead(async () => 'more', 'flood')).toEqual({ admitted: false, refusal: 'share' });
    await expect(gate.runRead(async () => 'other', 'victim')).resolves.toEqual({ admitted: true, value: 'other' });
    releases.forEach((r) => r());
    await Promise.all(held);
    // The share is a count of reads in flight, so it comes back when they end.
    await expect(gate.runRead(async () => 'again', 'flood')).resolves.toEqual({ admitted: true, value: 'again' });
    expect(new HandlerGate(loadConfig({ BUZZ_MAX_CONCURRENT_HANDLERS: '1024' })).keyShare).toBe(256);
  });

  describe('a REQ that finds the budget full', () => {
    afterEach(() => jest.useRealTimers());
    const holder = () => {
      const releases: Array<() => void> = [];
      return { releases, hold: () => new Promise<void>((resolve) => releases.push(resolve)) };
    };

    it('waits for a slot and runs when one frees, oldest first; COUNT is still refused at once', async () => {
      const gate = new HandlerGate(loadConfig({ BUZZ_MAX_CONCURRENT_HANDLERS: '2' }));
      const { releases, hold } = holder();
      const running = [gate.runRead(hold), gate.runRead(hold)];
      const order: string[] = [];
      const started = (name: string) => () => (order.push(name), hold());
      const first = gate.runRead(started('first'), undefined, 'wait');
      const second = gate.runRead(started('second'), undefined, 'wait');
      expect(gate.waitingReads).toBe(2);
      expect(await gate.runRead(async () => 'count')).toEqual({ admitted: false, refusal: 'capacity' });
      releases[0]();
      await running[0];
      expect(order).toEqual(['first']);
      expect(gate.waitingReads).toBe(1);
      releases[1]();
      await running[1];
      expect(order).toEqual(['first', 'second']);
      releases[2]();
      releases[3]();
      await Promise.all([first, second]);
      expect(gate.inFlight).toBe(0);
    });

    it('waits while EVENTs hold the budget, and runs when one ends', async () => {
      const gate = new HandlerGate(loadConfig({ BUZZ_MAX_CONCURRENT_HANDLERS: '1' }));
      const { releases, hold } = holder();
      const event = gate.run(hold);
      const read = gate.runRead(async () => 'read', undefined, 'wait');
      expect(gate.waitingReads).toBe(1);
      releases[0]();
      await event;
      await expect(read).resolves.toEqual({ admitted: true, value: 'read' });
    });

    it('is refused at HANDLER_WAIT_MS, and at once past HANDLER_WAITING_PER_SLOT × the budget waiting', async () => {
      jest.useFakeTimers();
      const gate = new HandlerGate(loadConfig({ BUZZ_MAX_CONCURRENT_HANDLERS: '1' }));
      const { releases, hold } = holder();
      const running = gate.runRead(hold);
      const waiting = Array.from({ length: HANDLER_WAITING_PER_SLOT }, () => gate.runRead(async () => 'late', undefined, 'wait'));
      expect(await gate.runRead(async () => 'over', undefined, 'wait')).toEqual({ admitted: false, refusal: 'capacity' });
      jest.advanceTimersByTime(HANDLER_WAIT_MS);
      for (const w of waiting) expect(await w).toEqual({ admitted: false, refusal: 'capacity' });
      expect(gate.inFlight).toBe(1);
      releases[0]();
      await running;
      expect(gate.inFlight).toBe(0);
    });

    it("counts toward its key's share while it waits", async () => {
      const gate = new HandlerGate(loadConfig({ BUZZ_MAX_CONCURRENT_HANDLERS: '8', BUZZ_KEY_SHARE_PERCENT: '25' }));
      const { releases, hold } = holder();
      const running = Array.from({ length: 8 }, (_, i) => gate.runRead(hold, `k${i}`));
      const waiting = [gate.runRead(async () => 1, 'flood', 'wait'), gate.runRead(async () => 2, 'flood', 'wait')];
      expect(await gate.runRead(async () => 3, 'flood', 'wait')).toEqual({ admitted: false, refusal: 'share' });
      releases.forEach((r) => r());
      await Promise.all(running);
      expect(await Promise.all(waiting)).toEqual([
        { admitted: true, value: 1 },
        { admitted: true, value: 2 },
      ]);
    });
  });
});
