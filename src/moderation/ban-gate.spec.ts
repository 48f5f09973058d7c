import { BanCache } from './ban-cache.js';
import { BanGate } from './ban-gate.service.js';
import type { ModerationRepository } from './moderation.repository.js';

const C = '00000000-0000-0000-0000-000000000001';
const tick = () => new Promise((r) => setImmediate(r));

/** A repository whose ban reads wait until the test answers them. */
function pendingReads() {
  const reads: Array<(found: Map<string, number>) => void> = [];
  const moderation = { banExpiries: () => new Promise<Map<string, number>>((resolve) => reads.push(resolve)) } as unknown as ModerationRepository;
  return { reads, moderation };
}

describe('BanGate.isBannedForRead', () => {
  it('reads a key once, then answers from the cache', async () => {
    const { reads, moderation } = pendingReads();
    const cache = new BanCache({ banRecheckMs: 60_000 });
    cache.setTrusted(true);
    const gate = new BanGate(moderation, cache);
    const first = gate.isBannedForRead(C, 'k');
    await tick();
    reads[0](new Map());
    expect(await first).toBe(false);
    expect(await gate.isBannedForRead(C, 'k')).toBe(false);
    expect(reads).toHaveLength(1);
  });

  it('does not let a caller join a read that a ban change overtook', async () => {
    const { reads, moderation } = pendingReads();
    const cache = new BanCache({ banRecheckMs: 60_000 });
    cache.setTrusted(true);
    const gate = new BanGate(moderation, cache);
    const first = gate.isBannedForRead(C, 'k');
    await tick();
    expect(reads).toHaveLength(1);
    cache.invalidate(C, 'k'); // the ban's notification arrives while that read runs
    const second = gate.isBannedForRead(C, 'k');
    await tick();
    expect(reads).toHaveLength(2);
    reads[0](new Map());
    reads[1](new Map([[`${C}:k`, Infinity]]));
    expect(await first).toBe(false);
    expect(await second).toBe(true);
    expect(cache.lookup(C, 'k')).toBe(true); // the older answer was not kept
  });
});
