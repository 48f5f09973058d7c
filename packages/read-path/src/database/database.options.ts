/**
 * What DatabaseModule needs, and nothing of the relay's configuration: the two connection
 * strings, the pool sizes, the writer session's timeouts and the two jobs an importer opts into
 * (the relay's migrations and its monthly `events` partitions). The relay maps its AppConfig onto
 * this (src/relay-database.modules.ts); another service writes it by hand (the package README).
 */
import { rootModuleBuilder } from '../common/root-module-builder.js';

export interface DatabaseModuleOptions {
  /** The writer (primary). Serving connections, migrations and, with ReplicaFenceModule, the probe use it. */
  readonly writerUrl: string;
  /** The streaming replica; absent = no reader pool and every read is a writer read. */
  readonly readerUrl?: string;
  /** Writer pool ceiling (`BUZZ_DB_POOL_SIZE` in the relay; default 20). */
  readonly poolSize?: number;
  /** Reader pool ceiling (`BUZZ_DB_READ_POOL_SIZE`; default the writer's). */
  readonly readPoolSize?: number;
  /** Writer session `statement_timeout`, ms (default 0, none). */
  readonly statementTimeoutMs?: number;
  /** Writer session `lock_timeout`, ms (default 5000). */
  readonly lockTimeoutMs?: number;
  /** Writer session `idle_in_transaction_session_timeout`, ms (default 60000). */
  readonly idleTxnTimeoutMs?: number;
  /** Named (prepared) statements per connection; 0 = every statement unnamed (default 100). */
  readonly statementCacheSize?: number;
  /**
   * NIP-50 search pool ceiling (`BUZZ_DB_SEARCH_POOL_SIZE`; default 4): matching runs there, on
   * the replica when configured, else on the writer's server, never on a serving writer connection.
   */
  readonly searchPoolSize?: number;
  /** Search sessions' `statement_timeout`, ms (`BUZZ_DB_CLIENT_READ_TIMEOUT_MS`; default 20000). */
  readonly searchStatementTimeoutMs?: number;
  /** Apply the relay's migrations at start. Only one process of a deployment should. */
  readonly migrate: boolean;
  /**
   * Create the monthly `events` partitions for this month and the next `monthsAhead` at start and
   * once a day after; false = another process (the relay) keeps them.
   */
  readonly partitionMaintenance: false | { readonly monthsAhead: number };
}

/** The pool-shaping part of the options with the defaults filled in (what pools.ts reads). */
export type PoolSettings = Required<
  Pick<
    DatabaseModuleOptions,
    'poolSize' | 'readPoolSize' | 'statementTimeoutMs' | 'lockTimeoutMs' | 'idleTxnTimeoutMs' | 'statementCacheSize' | 'searchPoolSize' | 'searchStatementTimeoutMs'
  >
>;

/** The relay's own defaults (docs/operator.md), so an importer that sets nothing gets the relay's pools. */
export function poolSettings(o: DatabaseModuleOptions): PoolSettings {
  const poolSize = o.poolSize ?? 20;
  return {
    poolSize,
    readPoolSize: o.readPoolSize ?? poolSize,
    statementTimeoutMs: o.statementTimeoutMs ?? 0,
    lockTimeoutMs: o.lockTimeoutMs ?? 5000,
    idleTxnTimeoutMs: o.idleTxnTimeoutMs ?? 60_000,
    statementCacheSize: o.statementCacheSize ?? 100,
    searchPoolSize: o.searchPoolSize ?? 4,
    searchStatementTimeoutMs: o.searchStatementTimeoutMs ?? 20_000,
  };
}

/**
 * `forRoot` / `forRootAsync`. The module is registered once, at the root, and is global (as an
 * ORM's root module is): the fence, the gate and the RoutedReader, and the importer's own
 * repositories, inject DatabaseService without importing it again.
 */
export const {
  ConfigurableModuleClass: ConfigurableDatabaseModule,
  MODULE_OPTIONS_TOKEN: DATABASE_OPTIONS,
} = rootModuleBuilder<DatabaseModuleOptions>('Database');
