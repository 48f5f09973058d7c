import { ProofRing } from './proof-ring.js';
import { minReadBudgetMs, PROOF_RING_CAPACITY, readBudgetWarning } from './replica-fence.constants.js';

function clock(start = 1_000_000) {
  let t = start;
  return { now: () => t, advance: (ms: number) => (t += ms) };
}

const E1 = '00000000-0000-4000-8000-000000000001';
const E2 = '00000000-0000-4000-8000-000000000002';

describe('ProofRing', () => {
  it('fence_starts_closed_and_opens_on_record', () => {
    const c = clock();
    const ring = new ProofRing(c.now);
    expect(ring.newest()).toBeUndefined();
    expect(ring.verifiedThrough()).toBeUndefined();
    expect(ring.heartbeatAgeMs()).toBeUndefined();
    expect(ring.record(1n, E1, c.now(), 5000)).toBe('recorded');
    expect(ring.verifiedThrough()).toBe(5000);
    expect(ring.covers(5000)).toBe(true);
    expect(ring.covers(5001)).toBe(false);
  });

  it('stale_fence_reads_as_closed (heartbeat age still reported)', () => {
    const c = clock();
    const ring = new ProofRing(c.now);
    ring.record(1n, E1, c.now(), 5000);
    c.advance(30_000);
    expect(ring.newest()?.token).toBe(1n);
    c.advance(1);
    expect(ring.newest()).toBeUndefined();
    expect(ring.verifiedThrough()).toBeUndefined();
    expect(ring.heartbeatAgeMs()).toBe(30_001);
  });

  it('resolve_picks_greatest_retained_token_at_or_below_observation', () => {
    const c = clock();
    const ring = new ProofRing(c.now);
    for (const t of [10n, 20n, 30n]) ring.record(t, E1, c.now(), Number(t));
    expect(ring.resolve(20n, E1)).toEqual({ kind: 'proved', entry: expect.objectContaining({ token: 20n }) });
    expect(ring.resolve(25n, E1)).toEqual({ kind: 'proved', entry: expect.objectContaining({ token: 20n }) });
    expect(ring.resolve(99n, E1)).toEqual({ kind: 'proved', entry: expect.objectContaining({ token: 30n }) });
    expect(ring.resolve(9n, E1)).toEqual({ kind: 'token_behind' });
    expect(ring.resolve(30n, E2)).toEqual({ kind: 'epoch_mismatch' });
    expect(new ProofRing(c.now).resolve(1n, E1)).toEqual({ kind: 'token_behind' });
  });

  it('record_epoch_change_resets_and_same_epoch_regression_fails', () => {
    const c = clock();
    const ring = new ProofRing(c.now);
    ring.record(5n, E1, c.now(), 1);
    ring.record(6n, E1, c.now(), 2);
    expect(ring.record(1n, E2, c.now(), 3)).toBe('recorded');
    expect(ring.size()).toBe(1);
    expect(ring.currentEpoch()).toBe(E2);
    expect(ring.record(1n, E2, c.now(), 4)).toBe('token_regression');
    expect(ring.size()).toBe(0);
    expect(ring.currentEpoch()).toBe(E2);
  });

  it('ring_capacity_evicts_oldest_entries', () => {
    const c = clock();
    const ring = new ProofRing(c.now);
    for (let t = 1; t <= PROOF_RING_CAPACITY + 5; t++) ring.record(BigInt(t), E1, c.now(), t);
    expect(ring.size()).toBe(PROOF_RING_CAPACITY);
    expect(ring.resolve(5n, E1)).toEqual({ kind: 'token_behind' });
    expect(ring.resolve(6n, E1)).toEqual({ kind: 'proved', entry: expect.objectContaining({ token: 6n }) });
  });

  it('close keeps the epoch', () => {
    const c = clock();
    const ring = new ProofRing(c.now);
    ring.record(5n, E1, c.now(), 1);
    ring.close();
    expect(ring.newest()).toBeUndefined();
    expect(ring.currentEpoch()).toBe(E1);
  });
});

describe('interval and budget (seed 001)', () => {
  it('min_read_budget is interval + 1000 + 200 ms', () => {
    expect(minReadBudgetMs(500)).toBe(1700);
    expect(minReadBudgetMs(300)).toBe(1500);
  });

  it('warns only with a reader, a budget above 0 and below the minimum', () => {
    expect(readBudgetWarning(1000, 500, true)).toMatch(/1000.*1700.*500 ms/);
    expect(readBudgetWarning(1700, 500, true)).toBeUndefined();
    expect(readBudgetWarning(0, 500, true)).toBeUndefined();
    expect(readBudgetWarning(1000, 500, false)).toBeUndefined();
  });
});
