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
import { CallbackQueryClient } from './callback-query-client.js';

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
 * Leading comment that marks a statement whose best plan does not depend on its values (an index
 * walk in page order that stops at LIMIT): outside a transaction block it runs on the generic plan
 * from its first call.
 *
 * Under `plan_cache_mode = auto` Postgres compares the generic plan's estimate with the average of
 * the first custom plans, and charges a custom plan almost nothing for planning. A REQ pinned to a
 * quiet channel has a cheap-looking custom plan (a sort of a few rows), so the statement kept
 * being planned on every call, about 3 ms of Postgres CPU on the partitioned `events` table, for
 * an execution of 0.2 ms. Other statements keep the session's own setting: where the best plan
 * does depend on the values (lists of authors or kinds, a tag page with an offset), a generic
 * plan could walk a whole community for a rare value.
 */
export const GENERIC_PLAN = '/* buzz:generic-plan */ ';

const NAMES_STATEMENTS = Symbol('buzz.namesStatements');

/**
 * Whether this connection keeps named statements for its session (a StatementCachingClient of
 * capacity > 0): a session-level prepared statement can then be relied on to stay.
 */
export function namesStatements(client: object): boolean {
  return (client as { [NAMES_STATEMENTS]?: boolean })[NAMES_STATEMENTS] === true;
}

/** What the session's `plan_cache_mode` is known to be. */
type PlanMode = 'session_default' | 'force_generic' | 'unknown';

/**
 * A client class whose parameterised `query(text, values)` calls run as named statements, at
 * most `capacity` distinct ones per connection, and whose GENERIC_PLAN statements run under
 * `plan_cache_mode = force_generic_plan`. Other call forms pass through unchanged.
 *
 * The plan mode is switched only when a parameterised statement needs the other one, by a `SET`
 * or `RESET` queued right before it (pg sends queued queries in order, so no extra wait on the
 * caller's side, one extra round trip on the connection), and only outside a transaction block:
 * inside one a rollback would undo the switch, and the proved reader transaction's statements
 * stay exactly its own. The replica's reads, which all run in that transaction, get the mode from
 * the transaction's first statement instead (RouteRequest.genericPlan, routing/reader-tx.ts).
 * A failed switch leaves the mode unknown until the next one.
 */
export function statementCachingClient(capacity: number): ClientClass {
  if (capacity <= 0) return CallbackQueryClient;
  return class StatementCachingClient extends CallbackQueryClient {
    readonly [NAMES_STATEMENTS] = true;
    private readonly prepared = new Set<string>();
    private planMode: PlanMode = 'session_default';

    // pg's `query` has many overloads; only (text, values[, callback]) is rewritten.
    override query(...args: unknown[]): never {
      const [text, values] = args;
      if (typeof text === 'string' && Array.isArray(values) && values.length > 0) {
        const generic = text.startsWith(GENERIC_PLAN);
        this.switchPlanMode(generic ? 'force_generic' : 'session_default');
        if (generic || PREPARABLE.test(text)) {
          const name = statementName(text);
          if (this.prepared.has(name) || this.prepared.size < capacity) {
            this.prepared.add(name);
            const config: QueryConfig = { name, text, values };
            return (super.query as (...a: unknown[]) => never)(config, ...args.slice(2));
          }
        }
      }
      return (super.query as (...a: unknown[]) => never)(...args);
    }

    private switchPlanMode(wanted: Exclude<PlanMode, 'unknown'>): void {
      // 'I': idle, outside a transaction block (pg's status from the last ReadyForQuery).
      if (this.planMode === wanted || this.getTransactionStatus() !== 'I') return;
      this.planMode = wanted;
      const statement = wanted === 'force_generic' ? 'set plan_cache_mode = force_generic_plan' : 'reset plan_cache_mode';
      (super.query(statement) as Promise<unknown>).catch(() => {
        this.planMode = 'unknown';
      });
    }
  };
}
