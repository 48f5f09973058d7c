import { jest } from '@jest/globals';
import { HISTORY_PERMIT_WAIT_MS, historyHeavyReadCap, historyReadCap, HistoryReadGate, type HistoryPermit, type HistoryRefusal } from './history-read-gate.js';

const gateFor = (readPoolSize: number) => new HistoryReadGate({ readPoolSize });

describe('history_reads (seed 000)', () => {
  it('cap sizing table: max(1, floor(4n/5))', () => {
    const table: Array<[number, number]> = [
      [1, 1],
      [2, 1],
      [3, 2],
      [4, 3],
      [5, 4],
      [10, 8],
      [20, 16],
      [24, 19],
      [50, 40],
    ];
    for (const [pool, cap] of table) {
      expect(historyReadCap(pool)).toBe(cap);
      expect(gateFor(pool).capacity).toBe(cap);
    }
    // Every pool of two or more keeps at least one connection free of history reads.
    for (let n = 2; n <= 200; n++) expect(historyReadCap(n)).toBeLessThan(n);
  });

  describe('under fake time', () => {
    beforeEach(() => jest.useFakeTimers());
    afterEach(() => jest.useRealTimers());

    it('bounded wait: a full gate rejects after exactly the permit budget, then reopens on release', async () => {
      const gate = gateFor(2); // one permit
      const held = await gate.acquire();
      expect(held).toBeDefined();
      let outcome: unknown = 'pending';
      void gate.acquire().then((p) => (outcome = p));
      await jest.advanceTimersByTimeAsync(HISTORY_PERMIT_WAIT_MS - 1);
      expect(outcome).toBe('pending');
      expect(gate.waiting).toBe(1);
      await jest.advanceTimersByTimeAsync(1);
      expect(outcome).toBeUndefined();
      expect(gate.waiting).toBe(0);
      expect(gate.inUse).toBe(1);

      held!.release();
      held!.release(); // idempotent: a double release never mints a second permit
      expect(gate.inUse).toBe(0);
      const again = await gate.acquire();
      expect(again).toBeDefined();
      expect(gate.inUse).toBe(1);
      again!.release();
    });

    it('is FIFO: a released permit goes to the oldest waiter, and newcomers queue behind it', async () => {
      const gate = gateFor(1);
      const first = (await gate.acquire())!;
      const order: string[] = [];
      const a = gate.acquire().then((p) => (order.push('a'), p));
      await jest.advanceTimersByTimeAsync(100);
      const b = gate.acquire().then((p) => (order.push('b'), p));
      first.release();
      const pa = await a;
      expect(order).toEqual(['a']);
      expect(gate.inUse).toBe(1);
      // A newcomer does not overtake b even though a permit is about to free up.
      const c = gate.acquire().then((p) => (order.push('c'), p));
      pa!.release();
      (await b)!.release();
      (await c)!.release();
      expect(order).toEqual(['a', 'b', 'c']);
      expect(gate.inUse).toBe(0);
    });

    it('a waiter that timed out is skipped by the hand-off', async () => {
      const gate = gateFor(1);
      const first = (await gate.acquire())!;
      const late = gate.acquire(500);
      await jest.advanceTimersByTimeAsync(500);
      expect(await late).toBeUndefined();
      first.release();
      expect(gate.inUse).toBe(0);
    });
  });

  describe('heavy reads', () => {
    beforeEach(() => jest.useFakeTimers());
    afterEach(() => jest.useRealTimers());

    const permitOf = (r: HistoryPermit | HistoryRefusal): HistoryPermit => {
      if ('refusal' in r) throw new Error(`refused at ${r.gate}: ${r.refusal}`);
      return r;
    };

    it('default: a quarter of the cap, at least one', () => {
      expect([1, 3, 4, 8, 16, 19, 40].map(historyHeavyReadCap)).toEqual([1, 1, 1, 2, 4, 4, 10]);
      expect(gateFor(20).heavy.capacity).toBe(4);
      expect(new HistoryReadGate({ readPoolSize: 20, heavyReadCap: 99 }).heavy.capacity).toBe(16);
    });

    it('past the heavy places a heavy read waits and is refused at history_heavy_reads, while light reads take the rest of the cap', async () => {
      const gate = new HistoryReadGate({ readPoolSize: 10, heavyReadCap: 2 }); // cap 8
      const heavy = [permitOf(await gate.admitRead(true, 'a')), permitOf(await gate.admitRead(true, 'b'))];
      let third: HistoryPermit | HistoryRefusal | 'pending' = 'pending';
      void gate.admitRead(true, 'c').then((r) => (third = r));
      const light = [];
      for (let i = 0; i < 6; i++) light.push(permitOf(await gate.admitRead(false, 'c')));
      expect(gate.inUse).toBe(8);
      await jest.advanceTimersByTimeAsync(HISTORY_PERMIT_WAIT_MS);
      expect(third).toEqual({ gate: 'history_heavy_reads', refusal: 'capacity' });
      // Releasing a heavy read's permit frees its heavy place too.
      heavy[0].release();
      heavy[0].release();
      expect(gate.heavy.inUse).toBe(1);
      expect(gate.inUse).toBe(7);
      const next = permitOf(await gate.admitRead(true, 'c'));
      expect(gate.heavy.inUse).toBe(2);
      for (const p of [heavy[1], next, ...light]) p.release();
      expect([gate.inUse, gate.heavy.inUse]).toEqual([0, 0]);
    });

    it('a heavy read that has its place but finds the cap full waits out one second in all, then gives the place back', async () => {
      const gate = new HistoryReadGate({ readPoolSize: 3, heavyReadCap: 1 }); // cap 2
      const light = [permitOf(await gate.admitRead(false)), permitOf(await gate.admitRead(false))];
      let outcome: HistoryPermit | HistoryRefusal | 'pending' = 'pending';
      void gate.admitRead(true, 'k').then((r) => (outcome = r));
      await jest.advanceTimersByTimeAsync(HISTORY_PERMIT_WAIT_MS - 5);
      expect(outcome).toBe('pending');
      expect(gate.heavy.inUse).toBe(1);
      await jest.advanceTimersByTimeAsync(5);
      expect(outcome).toEqual({ gate: 'history_reads', refusal: 'capacity' });
      expect(gate.heavy.inUse).toBe(0);
      for (const p of light) p.release();
    });
  });
});
