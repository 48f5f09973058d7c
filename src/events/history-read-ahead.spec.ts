/**
 * EventQueryService.history reads up to four filters ahead of the one its caller waits for, and
 * none while the caller's output is backlogged: each filter is then read when its turn comes, so
 * a client that does not take its frames leaves the rows in Postgres instead of in memory.
 */
import type { RoutedReader } from '@buzz-relay/read-path';
import { communityWide } from '../channels/read-scope.js';
import { parseFilter } from '../nostr/filter.js';
import type { NostrFilter } from '../nostr/nostr.types.js';
import { EventQueryService, FILTER_QUERY_CONCURRENCY, HistoryBatch } from './event-query.service.js';
import type { EventReadRepository } from './event-read.repository.js';

interface Harness {
  readonly query: EventQueryService;
  /** Authors of the filters whose read has started, in order. */
  readonly started: string[];
  /** Ends the read of the filter for `author` (an empty page). */
  finish(author: string): void;
}

function harness(): Harness {
  const started: string[] = [];
  const waiting = new Map<string, () => void>();
  const repo = {
    queryPage: async (_db: unknown, _scope: unknown, filter: NostrFilter) => {
      const author = filter.authors![0];
      started.push(author);
      await new Promise<void>((resolve) => waiting.set(author, resolve));
      return { events: [], cut: false };
    },
  } as unknown as EventReadRepository;
  const routed = {
    routingEnabled: true,
    owedOwnWrites: () => false,
    read: (_req: unknown, work: (db: unknown) => Promise<unknown>) => work({}),
    clientReadOnWriter: (_op: unknown, work: (db: unknown) => Promise<unknown>) => work({}),
  } as unknown as RoutedReader;
  return { query: new EventQueryService(routed, repo), started, finish: (author) => waiting.get(author)!() };
}

const authors = Array.from({ length: 7 }, (_, i) => String(i).repeat(64));
const filters = authors.map((a) => {
  const parsed = parseFilter({ kinds: [1], authors: [a] });
  if (!parsed.ok) throw new Error(parsed.reason);
  return parsed.filter;
});
const flush = () => new Promise((resolve) => setImmediate(resolve));

/** Drives the generator one batch at a time, finishing each filter's read when asked. */
async function step(h: Harness, gen: AsyncGenerator<HistoryBatch>, author: string): Promise<void> {
  const next = gen.next();
  await flush();
  h.finish(author);
  await next;
}

describe('history read-ahead', () => {
  it('reads four filters at once while the output keeps up, one more as each is taken', async () => {
    const h = harness();
    const gen = h.query.history(communityWide('c'), filters, true, { path: 'req_historical', reader: authors[0], outputBacklogged: () => false });
    await step(h, gen, authors[0]);
    expect(FILTER_QUERY_CONCURRENCY).toBe(4);
    expect(h.started).toEqual(authors.slice(0, 5));
    await step(h, gen, authors[1]);
    expect(h.started).toEqual(authors.slice(0, 6));
    await gen.return(undefined);
  });

  it('reads none ahead while the output is backlogged, and reads ahead again once it drained', async () => {
    const h = harness();
    let backlogged = true;
    const gen = h.query.history(communityWide('c'), filters, true, { path: 'req_historical', reader: authors[0], outputBacklogged: () => backlogged });
    await step(h, gen, authors[0]);
    expect(h.started).toEqual(authors.slice(0, 1));
    await step(h, gen, authors[1]);
    expect(h.started).toEqual(authors.slice(0, 2));
    backlogged = false;
    await step(h, gen, authors[2]);
    expect(h.started).toEqual(authors.slice(0, 7));
    await gen.return(undefined);
  });
});
