import { CountService } from './count.service.js';
import { FILTER_QUERY_CONCURRENCY, type EventQueryService } from './event-query.service.js';
import type { RelayMetrics } from '../metrics/relay-metrics.service.js';
import type { SearchRepository } from './search.repository.js';
import { communityWide } from '../channels/read-scope.js';
import type { NostrFilter } from '../nostr/nostr.types.js';

/** A query service whose counts the test settles one by one, recording how many ran at once. */
function fakeQueries() {
  const pending: Array<{ kinds: readonly number[]; resolve(n: number): void; reject(err: Error): void }> = [];
  let running = 0;
  let most = 0;
  const queries = {
    count: (_scope: unknown, [f]: NostrFilter[]) =>
      new Promise<number>((resolve, reject) => {
        running++;
        most = Math.max(most, running);
        const done = () => running--;
        pending.push({ kinds: f.kinds ?? [], resolve: (n) => (done(), resolve(n)), reject: (e) => (done(), reject(e)) });
      }),
  } as unknown as EventQueryService;
  return { queries, pending, most: () => most };
}

const ctx = { path: 'count_req' as const, reader: 'k' };
const filters = (n: number): NostrFilter[] => Array.from({ length: n }, (_, i) => ({ kinds: [i], tags: {}, extensions: {} }));
const ticks = async () => {
  for (let i = 0; i < 5; i++) await Promise.resolve();
};

describe('CountService.count', () => {
  it('sums every filter, reading at most FILTER_QUERY_CONCURRENCY at once', async () => {
    const q = fakeQueries();
    const counts = new CountService(q.queries, {} as SearchRepository, {} as RelayMetrics);
    const total = counts.count(communityWide('c'), filters(10), ctx);
    for (let settled = 0; settled < 10; settled++) {
      await ticks();
      q.pending.shift()!.resolve(settled + 1);
    }
    expect(await total).toBe(55);
    expect(q.most()).toBe(FILTER_QUERY_CONCURRENCY);
  });

  it('after a filter fails, starts no further filter and fails with that error', async () => {
    const q = fakeQueries();
    const counts = new CountService(q.queries, {} as SearchRepository, {} as RelayMetrics);
    const total = counts.count(communityWide('c'), filters(10), ctx);
    const outcome = total.then(
      () => 'counted',
      (err: Error) => err.message,
    );
    await ticks();
    expect(q.pending.map((p) => p.kinds[0])).toEqual([0, 1, 2, 3]);
    q.pending.shift()!.reject(new Error('shed'));
    await ticks();
    expect(await outcome).toBe('shed');
    // The three reads already running finish; nothing after them was started.
    for (const p of q.pending.splice(0)) p.resolve(1);
    await ticks();
    expect(q.pending).toEqual([]);
  });
});
