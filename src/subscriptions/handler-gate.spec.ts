import { loadConfig } from '../config/app-config.js';
import { HandlerGate } from './handler-gate.js';

describe('HandlerGate', () => {
  it('admits up to the configured number of handlers and refuses the rest without running them', async () => {
    const gate = new HandlerGate(loadConfig({ BUZZ_MAX_CONCURRENT_HANDLERS: '2' }));
    const releases: Array<() => void> = [];
    const hold = () => new Promise<void>((resolve) => releases.push(resolve));
    const first = gate.run(hold);
    const second = gate.run(hold);
    let ranThird = false;
    const third = await gate.run(async () => {
      ranThird = true;
    });
    expect(third).toEqual({ admitted: false });
    expect(ranThird).toBe(false);
    releases.forEach((r) => r());
    await expect(first).resolves.toEqual({ admitted: true, value: undefined });
    await second;
    await expect(gate.run(async () => 7)).resolves.toEqual({ admitted: true, value: 7 });
  });

  it('frees the slot when a handler throws', async () => {
    const gate = new HandlerGate(loadConfig({ BUZZ_MAX_CONCURRENT_HANDLERS: '1' }));
    await expect(gate.run(async () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    await expect(gate.run(async () => 'ok')).resolves.toEqual({ admitted: true, value: 'ok' });
  });

  it('keeps an eighth of the budget for EVENT: reads are refused there, an EVENT is still admitted', async () => {
    const gate = new HandlerGate(loadConfig({ BUZZ_MAX_CONCURRENT_HANDLERS: '16' }));
    expect(gate.readCapacity).toBe(14);
    const releases: Array<() => void> = [];
    const hold = () => new Promise<void>((resolve) => releases.push(resolve));
    const reads = Array.from({ length: 14 }, () => gate.runRead(hold));
    expect(await gate.runRead(async () => 'read')).toEqual({ admitted: false });
    await expect(gate.run(async () => 'event')).resolves.toEqual({ admitted: true, value: 'event' });
    const events = [gate.run(hold), gate.run(hold)];
    expect(await gate.run(async () => 'event')).toEqual({ admitted: false });
    releases.forEach((r) => r());
    await Promise.all([...reads, ...events]);
    expect(gate.inFlight).toBe(0);
  });

  it('reserves nothing when the budget is a single slot', () => {
    expect(new HandlerGate(loadConfig({ BUZZ_MAX_CONCURRENT_HANDLERS: '1' })).readCapacity).toBe(1);
    expect(new HandlerGate(loadConfig({ BUZZ_MAX_CONCURRENT_HANDLERS: '1024' })).readCapacity).toBe(896);
  });
});
