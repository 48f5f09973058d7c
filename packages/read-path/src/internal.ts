/**
 * `@buzz-relay/read-path/internal`: the parts of the read path the relay in this repository builds
 * on beyond the public entry (its own repositories, gates, metrics and CLI). Not for importers:
 * nothing here is covered by the package's version promise, and it may change in any release.
 */
export type { Permit } from './common/permit-gate.js';
export { PermitGate, shareOf } from './common/permit-gate.js';
export { loopFairDeadline } from './common/loop-fair-deadline.js';
export { CallbackQueryClient } from './database/callback-query-client.js';
export { REPLICA_FLOOR_LOCK_KEY } from './database/constants.js';
export { ensureFuturePartitions } from './database/partition-manager.js';
export { ACQUIRE_TIMEOUT_MESSAGE } from './database/pools.js';
export { GENERIC_PLAN } from './database/statement-cache.js';
export { E_TAG_DEADLINE_MS, withStatementDeadline } from './database/statement-deadline.js';
export { HISTORY_PERMIT_WAIT_MS } from './history-reads/history-read-gate.js';
export { HistoryReadPolicy } from './history-reads/history-read-policy.js';
export type { AdvisoryLockType, TransactionOperation } from './metrics/database-metrics.service.js';
export { datastoreSpan } from './metrics/datastore-span.js';
export { counter, gauge, histogram, MILLISECONDS_BUCKETS, SECONDS_BUCKETS } from './metrics/metric-factory.js';
export { recordReadShareRefusal } from './metrics/read-share-metrics.js';
export { forQuery, fromChannelCursor } from './routing/route-predicate.js';
export { HEAVY_READ_TERMS } from './routing/writer-reads.js';
export { fillEventRefs } from '../migrations/0016_event_refs.js';
