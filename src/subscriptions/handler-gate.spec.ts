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
});
