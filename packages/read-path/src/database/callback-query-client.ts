/**
 * A `pg.Client` whose promise-form `query` hands pg a callback instead.
 *
 * Called without a callback, pg 8 builds its `Query` first and assigns `query.callback` (the one
 * that settles the returned promise) afterwards. Under load on Node 20 (V8 11.3), that order led
 * V8's allocation-site pretenuring to allocate part of every query's result directly in the old
 * generation: `--trace-pretenuring-statistics` showed three sites whose sampled objects all
 * survived each scavenge. The rows and strings of every page then survived two scavenges and were
 * promoted, presumably because dead objects in the old generation still pointed at them (the
 * sites themselves were not identified). Passing the callback at construction (what this class
 * does) leaves the results young, and scavenges short; every pause stalls every REQ in flight.
 * `--no-allocation-site-pretenuring` is the other way out, but Node refuses it in NODE_OPTIONS.
 * The measurements behind this: docs/adr/0002-callback-query-client.md.
 *
 * The returned promise settles like pg's own: with the result, or with pg's error, its stack
 * re-captured after the fact as pg does, so that it leads back to the awaiting caller.
 * Calls that bring their own callback, or submit a query object, are passed through unchanged.
 */
import { Client } from 'pg';
import { syncReadDeadline } from './read-deadline.js';

type QueryCallback = (err: Error | null, result: unknown) => void;

function bringsOwnCallback(args: readonly unknown[]): boolean {
  const first = args[0] as { submit?: unknown; callback?: unknown } | null | undefined;
  if (typeof args[args.length - 1] === 'function') return true;
  return typeof first === 'object' && first !== null && (typeof first.submit === 'function' || typeof first.callback === 'function');
}

export class CallbackQueryClient extends Client {
  // pg's `query` has many overloads; every promise form ends up here as a callback form.
  override query(...args: unknown[]): never {
    const run = super.query as (...a: unknown[]) => never;
    // 'I': idle, outside a transaction block (pg's status from the last ReadyForQuery).
    syncReadDeadline(this, this.getTransactionStatus() === 'I', (statement) => this.sendOwn(run, statement));
    if (bringsOwnCallback(args)) return run.apply(this, args);
    return new Promise((resolve, reject) => {
      const callback: QueryCallback = (err, result) => (err ? reject(err) : resolve(result));
      run.apply(this, [...args, callback]);
    }).catch((err: Error) => {
      Error.captureStackTrace(err);
      throw err;
    }) as never;
  }

  /** A statement of the connection's own, sent through pg's query without re-entering this one. */
  private sendOwn(run: (...a: unknown[]) => never, statement: string): Promise<unknown> {
    return new Promise((resolve, reject) => {
      run.apply(this, [statement, (err: Error | null, result: unknown) => (err ? reject(err) : resolve(result))]);
    });
  }
}
