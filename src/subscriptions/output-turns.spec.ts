import { OutputTurns } from './output-turns.js';

/** A clock that moves only when a task says it worked: slices are decided by it, not by the machine. */
function fakeClock(): { now: () => number; work: (ms: number) => void } {
  let t = 0;
  return { now: () => t, work: (ms) => void (t += ms) };
}

describe('OutputTurns', () => {
  it('runs tasks in the order they were queued and resolves each caller with its own result', async () => {
    const turns = new OutputTurns();
    const ran: number[] = [];
    const results = await Promise.all([1, 2, 3, 4].map((n) => turns.run(() => (ran.push(n), n * 10))));
    expect(ran).toEqual([1, 2, 3, 4]);
    expect(results).toEqual([10, 20, 30, 40]);
    expect(turns.waiting).toBe(0);
  });

  it('does not run a task in the call that queues it', async () => {
    const turns = new OutputTurns();
    let ran = false;
    const done = turns.run(() => (ran = true));
    expect(ran).toBe(false);
    await done;
    expect(ran).toBe(true);
  });

  it('a throwing task rejects only its own caller; the tasks after it still run', async () => {
    const turns = new OutputTurns();
    const first = turns.run(() => {
      throw new Error('boom');
    });
    const second = turns.run(() => 'ok');
    await expect(first).rejects.toThrow('boom');
    await expect(second).resolves.toBe('ok');
  });

  it('gives the event loop back once a turn has used its slice: what became ready meanwhile runs before the next task', async () => {
    const clock = fakeClock();
    const turns = new OutputTurns(5, clock.now);
    const order: string[] = [];
    const tasks = Array.from({ length: 7 }, (_, i) =>
      turns.run(() => {
        order.push(`t${i + 1}`);
        // Something else gets ready while the first task runs (a socket read, a timer, a worker reply).
        if (i === 0) setImmediate(() => order.push('other'));
        clock.work(2);
      }),
    );
    await Promise.all(tasks);
    // 2 ms per task, 5 ms per slice: three tasks, then the other work, then the next three, then the last.
    expect(order).toEqual(['t1', 't2', 't3', 'other', 't4', 't5', 't6', 't7']);
  });

  it('runs at least one task per turn, however long it takes', async () => {
    const clock = fakeClock();
    const turns = new OutputTurns(5, clock.now);
    const order: string[] = [];
    const tasks = [0, 1, 2].map((i) =>
      turns.run(() => {
        order.push(`t${i + 1}`);
        if (i === 0) setImmediate(() => order.push('other'));
        clock.work(50);
      }),
    );
    await Promise.all(tasks);
    expect(order).toEqual(['t1', 'other', 't2', 't3']);
  });

  it('keeps its order across many turns while more work is queued', async () => {
    const clock = fakeClock();
    const turns = new OutputTurns(5, clock.now);
    const ran: number[] = [];
    const first = Array.from({ length: 3000 }, (_, i) => turns.run(() => (ran.push(i), clock.work(1))));
    await new Promise((r) => setImmediate(r));
    const later = Array.from({ length: 3000 }, (_, i) => turns.run(() => (ran.push(3000 + i), clock.work(1))));
    await Promise.all([...first, ...later]);
    expect(ran).toEqual(Array.from({ length: 6000 }, (_, i) => i));
  });
});
