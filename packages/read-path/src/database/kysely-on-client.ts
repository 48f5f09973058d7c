import { Kysely, PostgresDialect, PostgresPool, PostgresPoolClient } from 'kysely';
import { PoolClient } from 'pg';
import { DB } from './database.types.js';

const handles = new WeakMap<PoolClient, Kysely<DB>>();

/**
 * A Kysely handle bound to one checked-out connection: every query of the handle runs on that
 * connection (and so inside whatever transaction it holds). Releasing stays with the owner.
 * One handle per connection, kept as long as the connection lives: building a Kysely instance
 * per read showed in the REQ profile.
 */
export function kyselyOn(client: PoolClient): Kysely<DB> {
  let handle = handles.get(client);
  if (handle === undefined) {
    handle = bind(client);
    handles.set(client, handle);
  }
  return handle;
}

function bind(client: PoolClient): Kysely<DB> {
  const bound: PostgresPoolClient = {
    query: client.query.bind(client) as PostgresPoolClient['query'],
    release: () => undefined,
  };
  const pool: PostgresPool = { connect: async () => bound, end: async () => undefined };
  return new Kysely<DB>({ dialect: new PostgresDialect({ pool }) });
}
