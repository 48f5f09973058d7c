import { HistoryFlights } from './history-flights.js';

class Shed extends Error {}

describe('HistoryFlights', () => {
  it('a joiner of a flight that was shed retries with its own read, not the starter’s', async () => {
    const flights = new HistoryFlights((err) => err instanceof Shed);
    const ran: string[] = [];
    let refuse!: (err: unknown) => void;
    const starter = flights.run('page', undefined, () => {
      ran.push('starter');
      return new Promise<string>((_resolve, reject) => (refuse = reject));
    });
    const joiner = flights.run('page', undefined, async () => {
      ran.push('joiner');
      return 'rows for the joiner';
    });
    starter.catch(() => undefined);
    refuse(new Shed('the starter was over its share'));
    await expect(starter).rejects.toBeInstanceOf(Shed);
    await expect(joiner).resolves.toBe('rows for the joiner');
    expect(ran).toEqual(['starter', 'joiner']);
  });
});

describe('HistoryFlights: how long a flight takes joiners', () => {
  /** A flight whose start reports `started(how)` at once, then waits for `finish`. */
  function held(flights: HistoryFlights, how: 'waiting' | 'closed' | (() => boolean)) {
    let finish!: (rows: string) => void;
    const starts: number[] = [];
    const read = () =>
      flights.run('page', undefined, (_signal, started) => {
        starts.push(starts.length);
        if (how === 'closed') started();
        else if (how !== 'waiting') started(how);
        return new Promise<string>((resolve) => (finish = resolve));
      });
    return { read, starts, finish: (rows: string) => finish(rows) };
  }

  it('takes every identical read until its snapshot is fixed', async () => {
    const f = held(new HistoryFlights(), 'waiting');
    const reads = [f.read(), f.read(), f.read()];
    f.finish('rows');
    expect(await Promise.all(reads)).toEqual(['rows', 'rows', 'rows']);
    expect(f.starts).toHaveLength(1);
  });

  it('takes no read once a writer snapshot is fixed', () => {
    const f = held(new HistoryFlights(), 'closed');
    void f.read();
    void f.read();
    expect(f.starts).toHaveLength(2);
  });

  it('takes a read after a replica snapshot is fixed only while the proof would still serve it', async () => {
    let fresh = true;
    const f = held(new HistoryFlights(), () => fresh);
    const first = f.read();
    const joined = f.read();
    expect(f.starts).toHaveLength(1);
    fresh = false;
    const own = f.read();
    expect(f.starts).toHaveLength(2);
    f.finish('second flight');
    expect(await own).toBe('second flight');
    // The first flight's waiters are not moved: `finish` now ends the second one only.
    expect(await Promise.race([first, joined, Promise.resolve('still waiting')])).toBe('still waiting');
  });
});
