import { CoalescingLoader } from './coalescing-loader.js';

/** A loader whose loads the test settles by hand, recording each batch it was asked for. */
function harness(maxBatch = 100, maxConcurrent = 2) {
  const calls: Array<{ keys: string[]; settle(answers?: Map<string, string>, err?: Error): void }> = [];
  const loader = new CoalescingLoader<string, string>({
    keyOf: (k) => k,
    maxBatch,
    maxConcurrent,
    load: (keys) =>
      new Promise((resolve, reject) => {
        calls.push({ keys: [...keys], settle: (answers, err) => (err ? reject(err) : resolve(answers ?? new Map(keys.map((k) => [k, `v:${k}:${calls.length}`])))) });
      }),
  });
  return { loader, calls };
}

const turn = () => new Promise((r) => setImmediate(r));

describe('CoalescingLoader', () => {
  it('gives every concurrent caller of one key the same load, across turns', async () => {
    const { loader, calls } = harness();
    const first = loader.get('a');
    await turn();
    const later = [loader.get('a'), loader.get('a')];
    await turn();
    expect(calls.map((c) => c.keys)).toEqual([['a']]);
    calls[0].settle(new Map([['a', 'A']]));
    expect(await Promise.all([first, ...later])).toEqual(['A', 'A', 'A']);
  });

  it('answers different keys separately, batching those asked in one turn', async () => {
    const { loader, calls } = harness();
    const got = Promise.all([loader.get('a'), loader.get('b')]);
    await turn();
    expect(calls.map((c) => c.keys)).toEqual([['a', 'b']]);
    calls[0].settle(new Map([['a', 'A'], ['b', 'B']]));
    expect(await got).toEqual(['A', 'B']);
  });

  it('fails every waiter with the same error, caches nothing, and the next caller loads again', async () => {
    const { loader, calls } = harness();
    const waiters = [loader.get('a'), loader.get('a')].map((p) => p.catch((e: unknown) => e));
    await turn();
    const boom = new Error('pool timeout');
    calls[0].settle(undefined, boom);
    const errs = await Promise.all(waiters);
    expect(errs[0]).toBe(boom);
    expect(errs[1]).toBe(boom);
    const retry = loader.get('a');
    await turn();
    expect(calls).toHaveLength(2);
    calls[1].settle(new Map([['a', 'A2']]));
    expect(await retry).toBe('A2');
    expect(loader.pending).toBe(0);
  });

  it('fails a caller whose key the load left unanswered', async () => {
    const { loader, calls } = harness();
    const got = loader.get('a').catch((e: Error) => e.message);
    await turn();
    calls[0].settle(new Map());
    expect(await got).toMatch(/no answer for a/);
  });

  it('runs at most maxConcurrent loads; keys that queue meanwhile go out in one batch', async () => {
    const { loader, calls } = harness(100, 1);
    const a = loader.get('a');
    await turn();
    const rest = [loader.get('b'), loader.get('c'), loader.get('b')];
    await turn();
    expect(calls.map((c) => c.keys)).toEqual([['a']]);
    calls[0].settle();
    await a;
    expect(calls.map((c) => c.keys)).toEqual([['a'], ['b', 'c']]);
    calls[1].settle(new Map([['b', 'B'], ['c', 'C']]));
    expect(await Promise.all(rest)).toEqual(['B', 'C', 'B']);
  });

  it('splits batches at maxBatch', async () => {
    const { loader, calls } = harness(2, 4);
    void loader.get('a');
    void loader.get('b');
    void loader.get('c');
    await turn();
    expect(calls.map((c) => c.keys)).toEqual([['a', 'b'], ['c']]);
  });

  it('a fresh caller and a caller after forget do not join a running load', async () => {
    const { loader, calls } = harness(100, 4);
    const old = loader.get('a');
    await turn();
    const fresh = loader.get('a', { fresh: true });
    await turn();
    expect(calls).toHaveLength(2);
    loader.forget((k) => k === 'a');
    const afterForget = loader.get('a');
    await turn();
    expect(calls).toHaveLength(3);
    calls[0].settle(new Map([['a', 'old']]));
    calls[1].settle(new Map([['a', 'fresh']]));
    calls[2].settle(new Map([['a', 'new']]));
    expect(await Promise.all([old, fresh, afterForget])).toEqual(['old', 'fresh', 'new']);
  });
});
