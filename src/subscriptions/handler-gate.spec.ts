import { loadConfig } from '../config/app-config.js';
import { HandlerGate } from './handler-gate.js';

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
});
