/**
 * Server-side prepared statements for the relay's parameterised SQL.
 *
 * `events` is partitioned by month and carries nine indexes per partition, so Postgres spends
 * 2–3 ms planning even a `limit 20` history page whose execution takes 0.1–0.2 ms (measured on
 * a warm session with 16 partitions). An unnamed statement is planned on every call. A named
 * one is parsed once per connection, and after five executions Postgres may switch it to a
 * generic plan that skips planning entirely (`plan_cache_mode = auto`).
 *
 * So every pool connection names each parameterised statement after a hash of its text, up to
 * `capacity` distinct statements per connection; past that, further statements run unnamed.
 * The text of a Kysely query depends on the filter's shape, not its values, so a few dozen
 * shapes cover the hot paths. Statements without parameters (BEGIN, COMMIT, SET) stay unnamed.
 * The cap bounds the plans a backend keeps. Capacity 0 turns the cache off, for poolers that
 * cannot carry prepared statements across transactions (PgBouncer in transaction mode before
 * 1.21).
 */
import { createHash } from 'node:crypto';
import { Client, ClientConfig, QueryConfig } from 'pg';

/** A `pg.Client` subclass for the pool's `Client` option. */
export type ClientClass = new (config?: string | ClientConfig) => Client;

const PREPARABLE = /^\s*(select|with|insert|update|delete)\b/i;

/** Text → statement name, shared by all connections; bounded like the per-connection sets. */
const names = new Map<string, string>();
const MAX_NAMES = 4096;

function statementName(text: string): string {
  let name = names.get(text);
  if (name === undefined) {
    name = `buzz_${createHash('sha1').update(text).digest('base64url')}`;
    if (names.size >= MAX_NAMES) names.clear();
    names.set(text, name);
  }
  return name;
}

/**
 * A client class whose parameterised `query(text, values)` calls run as named statements, at
 * most `capacity` distinct ones per connection. Other call forms pass through unchanged.
 */
export function statementCachingClient(capacity: number): ClientClass {
  if (capacity <= 0) return Client;
  return class StatementCachingClient extends Client {
    private readonly prepared = new Set<string>();

    // pg's `query` has many overloads; only (text, values[, callback]) is rewritten.
    override query(...args: unknown[]): never {
      const [text, values] = args;
      if (typeof text === 'string' && Array.isArray(values) && values.length > 0 && PREPARABLE.test(text)) {
        const name = statementName(text);
        if (this.prepared.has(name) || this.prepared.size < capacity) {
          this.prepared.add(name);
          const config: QueryConfig = { name, text, values };
          return (super.query as (...a: unknown[]) => never)(config, ...args.slice(2));
        }
      }
      return (super.query as (...a: unknown[]) => never)(...args);
    }
  };
}
