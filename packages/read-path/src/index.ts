/**
 * `@buzz-relay/read-path`: the read path as a library for Nest services (README.md beside this package).
 * The read path as one module (ReadPathModule) and its four modules with their options, the RoutedReader and what its reads take and throw, the
 * typed database errors and the filter that answers them, the `buzz_db_*` metric families, and
 * the schema types. Nothing here reads the relay's configuration or registers a relay metric.
 */
// The Kysely the handles are built with: an app that types its queries (`Kysely<DB>`, `sql`) with
// these uses the same copy as the read path, whatever kysely it has itself.
export { Kysely, sql } from 'kysely';
export { ReadPathModule, READ_PATH_OPTIONS } from './read-path.module.js';
export type { ReadPathModuleAsyncOptions, ReadPathModuleOptions } from './read-path.module.js';
export { DatabaseModule } from './database/database.module.js';
export { DATABASE_OPTIONS } from './database/database.options.js';
export type { DatabaseModuleOptions } from './database/database.options.js';
export { DatabaseService } from './database/database.service.js';
export type { ReaderState } from './database/database.service.js';
export type { ChannelMemberRole, ChannelType, ChannelVisibility, DB, RelayMemberRole, ReportStatus, ReportTargetKind } from './database/database.types.js';
export { migrateToLatest } from './database/migrator.js';
export {
  DatabaseError,
  DatabaseUnavailableError,
  HistoryReadRejectedError,
  LockTimedOutError,
  OwnWordingFailure,
  PoolTimeoutError,
  QueryTimedOutError,
  ReadShareExceededError,
  toDatabaseError,
  WriterReadRejectedError,
} from './database/database-errors.js';
export type { HistoryRejectReason, SharedReadGate } from './database/database-errors.js';

export { ReplicaFenceModule } from './replica-fence/replica-fence.module.js';
export { REPLICA_FENCE_OPTIONS } from './replica-fence/replica-fence.options.js';
export type { ReplicaFenceModuleOptions } from './replica-fence/replica-fence.options.js';
export { ReplicaFenceService } from './replica-fence/replica-fence.service.js';
export { ReplicaFenceStartError } from './replica-fence/replica-fence-start-error.js';
export type { FenceState } from './replica-fence/replica-fence.service.js';
export { minReadBudgetMs } from './replica-fence/replica-fence.constants.js';

export { HistoryReadsModule } from './history-reads/history-reads.module.js';
export { HISTORY_READS_OPTIONS } from './history-reads/history-reads.options.js';
export type { HistoryReadsModuleOptions } from './history-reads/history-reads.options.js';
export { HistoryReadGate, historyHeavyReadCap, historyReadCap } from './history-reads/history-read-gate.js';
export type { HistoryRefusal } from './history-reads/history-read-gate.js';

export { RoutedReaderModule } from './routing/routed-reader.module.js';
export { ROUTED_READER_OPTIONS } from './routing/routed-reader.options.js';
export type { RoutedReaderModuleOptions } from './routing/routed-reader.options.js';
export { RoutedReader } from './routing/routed-reader.service.js';
export type { WriterReadOptions } from './routing/routed-reader.service.js';
export type { Author } from './routing/recent-writes.js';
export { BOUNDED, ChannelScope } from './routing/route-predicate.js';
export type { RoutePredicate } from './routing/route-predicate.js';
export type { ReaderOperation, ReplicaPageRules, RouteRequest } from './routing/routed-read.types.js';
export { ReadSession } from './routing/read-session.js';
export { RoutePaths, UnknownRoutePathError } from './routing/route-paths.js';

export { DatabaseMetrics, ROUTE_PATHS } from './metrics/database-metrics.service.js';
export type { RoutePath, RoutePathLabel, WriterOperation } from './metrics/database-metrics.service.js';

// The filter for the layer's own errors (503 `database unavailable` / `query timed out` with
// Retry-After, 429 for a key's read share) in HTTP, WebSocket and RPC contexts; the app binds it.
export { DatabaseErrorFilter, databaseErrorAnswer } from './database/database-error.filter.js';
export type { DatabaseErrorAnswer } from './database/database-error.filter.js';
