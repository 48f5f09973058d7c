import { jest } from '@jest/globals';
import { GateRefusal, Permit, PermitGate, shareOf, USAGE_HALF_LIFE_MS } from './permit-gate.js';

/** A gate on a clock the test moves (fake timers drive the waits, `clock.now` the usage). */
function gateOf(capacity: number, share?: number) {
  const clock = { now: 0 };
  return { gate: new PermitGate(capacity, { share, now: () => clock.now }), clock };
}

async function advance(clock: { now: number }, ms: number): Promise<void> {
  clock.now += ms;
  await jest.advanceTimersByTimeAsync(ms);
}

const isPermit = (p: Permit | GateRefusal | undefined): p is Permit => typeof p === 'object';

describe('PermitGate', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('shareOf: a percent of the capacity, rounded down, at least one, at most all', () => {
    expect([shareOf(10, 25), shareOf(16, 25), shareOf(4, 25), shareOf(1024, 25), shareOf(3, 100), shareOf(5, 1)]).toEqual([2, 4, 1, 256, 3, 1]);
  });

  it('a tenant holds at most its share; its next caller waits behind its own work while another tenant is admitted', async () => {
    const { gate, clock } = gateOf(4, 2);
    const a1 = await gate.admit(1000, 'a');
    const a2 = await gate.admit(1000, 'a');
    let a3: Permit | GateRefusal | undefined;
    void gate.admit(1000, 'a').then((p) => (a3 = p));
    await advance(clock, 10);
    expect(a3).toBeUndefined();
    expect(gate.heldBy('a')).toBe(2);
    const b = await gate.admit(1000, 'b');
    expect(isPermit(b)).toBe(true);
    // Its own permit coming back is what lets it in.
    (a1 as Permit).release();
    await advance(clock, 0);
    expect(isPermit(a3)).toBe(true);
    for (const p of [a2, a3, b]) (p as Permit).release();
    expect(gate.inUse).toBe(0);
  });

  it('a wait that ends behind its own share is refused as `share`; one behind a full gate as `capacity`', async () => {
    const { gate, clock } = gateOf(2, 1);
    const a = (await gate.admit(1000, 'a')) as Permit;
    const b = (await gate.admit(1000, 'b')) as Permit;
    const overShare = gate.admit(1000, 'a');
    const full = gate.admit(1000, 'c');
    await advance(clock, 1000);
    await expect(overShare).resolves.toBe('share');
    await expect(full).resolves.toBe('capacity');
    expect(gate.waiting).toBe(0);
    a.release();
    b.release();
    // Without a share, a tenant holding the whole gate is refused for capacity.
    const plain = gateOf(1).gate;
    const all = (await plain.admit(1000, 'a')) as Permit;
    const more = plain.admit(1000, 'a');
    await advance(clock, 1000);
    await expect(more).resolves.toBe('capacity');
    all.release();
  });

  it("a freed permit goes to the tenant that used the gate least, not to the oldest waiter: a flood's backlog does not starve a newcomer", async () => {
    const { gate, clock } = gateOf(2, 1);
    // Two flooding tenants hold the gate for long reads and keep more queued.
    const f1 = (await gate.admit(1000, 'flood-1')) as Permit;
    const f2 = (await gate.admit(1000, 'flood-2')) as Permit;
    await advance(clock, 300);
    f1.release();
    const again = (await gate.admit(1000, 'flood-1')) as Permit; // free permit: taken at once
    const queued = [gate.admit(1000, 'flood-1'), gate.admit(1000, 'flood-2'), gate.admit(5000, 'flood-3')];
    await advance(clock, 300);
    const victim = gate.admit(1000, 'victim');
    await advance(clock, 100);
    f2.release();
    await advance(clock, 0);
    // flood-3 waited longest and has never held one, but flood-2 and flood-1 are at their share;
    // between flood-3 and the victim (both unused) the older waiter wins: first come, first served.
    expect(isPermit(await Promise.race([queued[2], Promise.resolve(undefined)]))).toBe(true);
    again.release();
    await advance(clock, 0);
    // Now flood-1 (used 300 ms) and the victim (used nothing) wait: the victim goes first.
    expect(isPermit(await Promise.race([victim, Promise.resolve(undefined)]))).toBe(true);
    expect(await Promise.race([queued[0], Promise.resolve('pending')])).toBe('pending');
    await advance(clock, 1000);
    await Promise.all(queued.map((q) => q.then((p) => isPermit(p) && p.release())));
    ((await victim) as Permit).release();
  });

  it('counts permit-time: a tenant of cheap reads is served before one of expensive reads, and past use is forgiven over time', async () => {
    const { gate, clock } = gateOf(1, 1);
    const cheap = (await gate.admit(10_000, 'cheap')) as Permit;
    await advance(clock, 5);
    cheap.release();
    const costly = (await gate.admit(10_000, 'costly')) as Permit;
    await advance(clock, 2000);
    costly.release();
    const holder = (await gate.admit(10_000, 'holder')) as Permit;
    const order: string[] = [];
    const costlyNext = gate.admit(10_000, 'costly').then((p) => (order.push('costly'), p));
    await advance(clock, 10);
    const cheapNext = gate.admit(10_000, 'cheap').then((p) => (order.push('cheap'), p));
    await advance(clock, 10);
    holder.release();
    await advance(clock, 0);
    ((await cheapNext) as Permit).release();
    await advance(clock, 0);
    ((await costlyNext) as Permit).release();
    expect(order).toEqual(['cheap', 'costly']);

    // Long after, both tenants' use has decayed to almost nothing: the older waiter goes first.
    await advance(clock, 20 * USAGE_HALF_LIFE_MS);
    const h = (await gate.admit(1000, 'holder')) as Permit;
    const later: string[] = [];
    const c1 = gate.admit(1000, 'costly').then((p) => (later.push('costly'), p));
    await advance(clock, 1);
    const c2 = gate.admit(1000, 'cheap').then((p) => (later.push('cheap'), p));
    h.release();
    await advance(clock, 0);
    ((await c1) as Permit).release();
    await advance(clock, 0);
    ((await c2) as Permit).release();
    expect(later).toEqual(['costly', 'cheap']);
  });

  it('without tenants it is the FIFO semaphore it was; the relay’s own (unattributed) callers go before tenants', async () => {
    const { gate, clock } = gateOf(1);
    const first = (await gate.acquire(1000))!;
    const order: string[] = [];
    const tenant = gate.acquire(1000, 't').then((p) => (order.push('t'), p));
    await advance(clock, 1);
    const a = gate.acquire(1000).then((p) => (order.push('a'), p));
    await advance(clock, 1);
    const b = gate.acquire(1000).then((p) => (order.push('b'), p));
    first.release();
    for (const p of [a, b, tenant]) {
      await advance(clock, 0);
      (await p)!.release();
    }
    expect(order).toEqual(['a', 'b', 't']);
  });

  it('a double release never mints a second permit, and idle tenants are forgotten once their use decayed', async () => {
    const { gate, clock } = gateOf(2, 1);
    const p = (await gate.admit(1000, 'a')) as Permit;
    p.release();
    p.release();
    expect(gate.inUse).toBe(0);
    for (let i = 0; i < 50; i++) {
      const held = (await gate.admit(1000, `k${i}`)) as Permit;
      clock.now += 5;
      held.release();
    }
    expect((gate as unknown as { tenants: Map<string, unknown> }).tenants.size).toBe(50);
    await advance(clock, 30 * USAGE_HALF_LIFE_MS);
    ((await gate.admit(1000, 'late')) as Permit).release();
    expect((gate as unknown as { tenants: Map<string, unknown> }).tenants.size).toBeLessThanOrEqual(1);
  });

  describe('rescue', () => {
    /** On the fake timers' own clock, so a hold's age is what it is when each timer fires. */
    function rescuing(capacity: number) {
      const gate = new PermitGate(capacity, { share: 1, now: () => Date.now(), preemptAfterMs: 500, preemptMinHoldMs: 1000 });
      const stopped: string[] = [];
      /** A permit whose preempt callback ends its work: it is released at once. */
      const hold = async (tenant: string) => {
        let permit: Permit | undefined;
        const outcome = await gate.admit(5000, tenant, () => {
          stopped.push(tenant);
          permit?.release();
        });
        permit = outcome as Permit;
        return permit;
      };
      const wait = (ms: number) => jest.advanceTimersByTimeAsync(ms);
      return { gate, stopped, hold, wait };
    }

    it('stops the long hold of the tenant that used the gate most for a tenant holding nothing, which then gets the place', async () => {
      const { gate, stopped, hold, wait } = rescuing(2);
      const light = await hold('light');
      await wait(10);
      light.release();
      const heavy = await hold('heavy');
      await wait(400);
      const heavier = await hold('heavier');
      await wait(200);
      heavy.release(); // heavy used 600 ms; its next read holds on
      const heavyAgain = await hold('heavy');
      await wait(1500);
      let got: Permit | GateRefusal | undefined;
      void gate.admit(1000, 'victim').then((p) => (got = p));
      await wait(499);
      expect(stopped).toEqual([]);
      await wait(1);
      // heavier has held 2,200 ms; heavy holds 2,000 ms and used 600 ms before (about 520 once
      // decayed): heavy used the gate most and is stopped.
      expect(stopped).toEqual(['heavy']);
      await wait(0);
      expect(isPermit(got)).toBe(true);
      (got as Permit).release();
      heavier.release();
      heavyAgain.release();
    });

    it('never stops a short hold, an unattributed one, or one whose caller cannot stop it; a waiter that holds a permit triggers nothing', async () => {
      const { gate, stopped, hold, wait } = rescuing(3);
      const plain = (await gate.admit(5000, 'no-callback')) as Permit;
      const internal = (await gate.acquire(5000))!;
      const short = await hold('short');
      await wait(200);
      const victim = gate.admit(1000, 'victim');
      await wait(1000);
      await expect(victim).resolves.toBe('capacity');
      expect(stopped).toEqual([]);
      // 'short' has now held 1,200 ms, but its own tenant waiting for a second place is no rescue.
      const sameTenant = gate.admit(1000, 'short');
      await wait(1000);
      await expect(sameTenant).resolves.toBe('share');
      expect(stopped).toEqual([]);
      for (const p of [plain, internal, short]) p.release();
    });
  });
});
