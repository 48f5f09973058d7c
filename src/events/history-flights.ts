/**
 * Single flight for identical history reads (a reconnect storm asks a thousand times
 * for the same recent page). Reads with the same key that arrive while one such read is still
 * waiting for its turn (a history permit, a connection, a proof) share that read: one database
 * read, its rows handed to every waiter, each of which then applies its own filter match,
 * visibility check, EOSE and live registration.
 *
 * When a flight's snapshot is fixed (`started()`) it takes joiners only as far as that snapshot
 * would serve them. A writer read's snapshot is taken as its statement starts: no later read
 * joins, so no waiter gets rows from a snapshot taken before it asked. A replica read's snapshot
 * is proved for bounded staleness (docs/read-routing.md): a later read joins while that proof is
 * still within the bound the later read would be held to (`started(stillShared)`), the check its
 * own proof would have to pass, so every waiter gets what it could have got alone. (Under the
 * large-readers attack the replica then served 14–18 % fewer reads: journal/30.)
 *
 * A failed flight fails every waiter with the same error, with one exception: a flight that was
 * shed (the reader busy, seed 000) fails only the read that started it. The reads that joined it
 * never had an attempt of their own, so they get one: together, as one new flight. (Measured: one
 * shed flight in a 1,000-client storm sent 651 clients into retries.) A waiter whose client went
 * away just stops waiting; the flight's statement is cancelled only once every waiter's client
 * has gone.
 *
 * What may share is decided by the key (EventQueryService.flightKey): the same community, channel
 * scope, path and filter, and the same reader whenever the filter can match a gated kind. A
 * reader owed read-your-writes never joins.
 */
import { counter } from '@buzz-relay/read-path/internal';

const joinedReads = counter({
  name: 'buzz_history_reads_coalesced_total',
  help: 'History reads served by an identical read in flight (single flight), with no database read of their own',
});

/**
 * Says the flight's snapshot is fixed. Without `stillShared` no later read may join; with it, a
 * later read joins while it returns true.
 */
export type Started = (stillShared?: () => boolean) => void;

type Start<T> = (signal: AbortSignal | undefined, started: Started) => Promise<T>;

interface Flight {
  promise: Promise<unknown>;
  readonly controller: AbortController;
  waiters: number;
  gone: number;
  /** Undefined while the snapshot is not fixed: any identical read may join. */
  joinable?: () => boolean;
}

const never = () => false;

export class HistoryFlights {
  private readonly open = new Map<string, Flight>();

  /** `shed(err)`: whether a flight's error is a shed read, which its joiners get another attempt after. */
  constructor(private readonly shed: (err: unknown) => boolean = () => false) {}

  /**
   * Runs `start` for this read, or joins the open flight with the same key. `start` gets the
   * flight's signal (aborted once every waiter's `signal` is) and must call `started()` once its
   * snapshot is fixed (RouteRequest.onSnapshot), with `stillShared` when later reads may still
   * take it. Without a key the read runs alone. `retried`: this read
   * already joined a flight that was shed, and gets no further attempt.
   */
  run<T>(key: string | undefined, signal: AbortSignal | undefined, start: Start<T>, retried = false): Promise<T> {
    signal?.throwIfAborted();
    if (key === undefined) return start(signal, () => undefined);
    const open = this.open.get(key);
    if (open !== undefined && !open.controller.signal.aborted && (open.joinable?.() ?? true)) {
      joinedReads.inc();
      return this.join(open, signal).catch((err: unknown) => {
        if (retried || !this.shed(err) || signal?.aborted === true) throw err;
        // Its own start, not the flight's: the retry is charged to this read's own reader.
        return this.run(key, signal, start, true);
      }) as Promise<T>;
    }
    const flight: Flight = { promise: Promise.resolve(), controller: new AbortController(), waiters: 0, gone: 0 };
    const close = () => {
      if (this.open.get(key) === flight) this.open.delete(key);
    };
    const started: Started = (stillShared) => {
      flight.joinable = stillShared ?? never;
      if (stillShared === undefined) close();
    };
    flight.promise = start(flight.controller.signal, started);
    this.open.set(key, flight);
    flight.promise.then(close, close);
    return this.join(flight, signal) as Promise<T>;
  }

  private join(flight: Flight, signal: AbortSignal | undefined): Promise<unknown> {
    flight.waiters += 1;
    if (signal === undefined) {
      flight.gone = Number.NEGATIVE_INFINITY; // a waiter that cannot go away keeps the read alive
      return flight.promise;
    }
    const onGone = () => {
      flight.gone += 1;
      if (flight.gone >= flight.waiters) flight.controller.abort();
    };
    signal.addEventListener('abort', onGone, { once: true });
    const stop = () => signal.removeEventListener('abort', onGone);
    flight.promise.then(stop, stop);
    return flight.promise;
  }
}
