/**
 * Database-layer Prometheus families (database.md §6). Names, labels and label values are a
 * wire contract with dashboards: keep them exactly as the spec writes them. Every label
 * vocabulary is closed and listed here, so the series budget is derivable from this file.
 */
import { performance } from 'node:perf_hooks';
import { Injectable } from '@nestjs/common';
import { trace } from '@opentelemetry/api';
import type { ConnectionStep, ConnectionStepOutcome, ConnectionStepSink } from '../database/connection-steps.js';
import { counter, gauge, histogram, SECONDS_BUCKETS } from './metric-factory.js';

/** `path` values of buzz_db_route_decision and buzz_db_reader_spill_total (§6.1, closed). */
export const ROUTE_PATHS = [
  'channel_cursor',
  'channel_head',
  'thread_cursor',
  'thread_head',
  'thread_eof',
  'thread_window_cursor',
  'thread_window_head',
  'relay_membership',
  'req_historical',
  'req_search_hydrate',
  'count_req',
  'count_req_fallback',
  'bridge_query',
  'bridge_feed',
  'bridge_thread_aux',
  'bridge_count',
  'bridge_count_fallback',
  'bridge_search_hydrate',
] as const;
export type RoutePath = (typeof ROUTE_PATHS)[number];
/** A route path label: one of the relay's, or one an importer registered (routing/route-paths.ts). */
export type RoutePathLabel = RoutePath | (string & Record<never, never>);

/** §2.9: the reason catalogue, per decision. */
export const WRITER_REASONS = [
  'disabled',
  'uninitialized',
  'stale',
  'reader_acquire_timeout',
  'reader_validation_error',
  'reader_token_behind',
  'reader_proof_timeout',
  'replica_error',
  'missing_root',
] as const;
export const REPLICA_REASONS = ['covered', 'fresh', 'statement_cancelled'] as const;
export const REJECTED_REASONS = ['history_read_cap', 'reader_acquire_timeout'] as const;
export type WriterReason = (typeof WRITER_REASONS)[number];
export type ReplicaReason = (typeof REPLICA_REASONS)[number];
export type RejectedReason = (typeof REJECTED_REASONS)[number];
export type RouteEvent =
  | { readonly decision: 'writer'; readonly reason: WriterReason }
  | { readonly decision: 'replica'; readonly reason: ReplicaReason }
  | { readonly decision: 'rejected'; readonly reason: RejectedReason };

/** Seed 001: the eight spill reasons, closed. */
export const SPILL_REASONS = [
  'heartbeat_stale',
  'heartbeat_missing',
  'fence_wall_behind',
  'replica_lag',
  'reader_acquire_timeout',
  'reader_proof_timeout',
  'reader_token_behind',
  'reader_validation_error',
] as const;
export type SpillReason = (typeof SPILL_REASONS)[number];

/** §6.2: the twelve valid (pool_role, operation) pairs. */
export const WRITER_OPERATIONS = [
  'bootstrap',
  'readiness',
  'tenant_resolution',
  'authentication',
  'authorization',
  'subscription_history',
  'event_write',
  'maintenance',
] as const;
export const READER_OPERATIONS = ['bootstrap', 'authorization', 'subscription_history', 'maintenance'] as const;
/**
 * The search pool's one pair (this project's addition to §6.2's twelve): matching is a client's
 * history read, so it carries `subscription_history`.
 */
export const SEARCH_OPERATIONS = ['subscription_history'] as const;
export type WriterOperation = (typeof WRITER_OPERATIONS)[number];
export type ReaderPoolOperation = (typeof READER_OPERATIONS)[number];
export type SearchPoolOperation = (typeof SEARCH_OPERATIONS)[number];
export type PoolAcquire =
  | { readonly poolRole: 'writer'; readonly operation: WriterOperation }
  | { readonly poolRole: 'reader'; readonly operation: ReaderPoolOperation }
  | { readonly poolRole: 'search'; readonly operation: SearchPoolOperation };
export const ACQUIRE_OUTCOMES = ['success', 'error', 'timeout', 'cancelled'] as const;
export type AcquireOutcome = (typeof ACQUIRE_OUTCOMES)[number];

/**
 * §6.3: advisory-lock families. `lock_type` is closed; this relay takes `replacement` (a
 * replaceable or addressable coordinate) and `membership` (NIP-29 group state and invites, the
 * NIP-43 membership snapshot). `push_gate` and `deletion` name features this relay does not have,
 * and the migrator's lock is taken inside Kysely. Outcomes: `success`, `timeout` (SQLSTATE 55P03,
 * the session's `lock_timeout`), `error` (anything else, e.g. a cancelled statement).
 */
export const ADVISORY_LOCK_TYPES = ['replacement', 'membership', 'push_gate', 'deletion', 'migration_schema_safety'] as const;
export type AdvisoryLockType = (typeof ADVISORY_LOCK_TYPES)[number];
export const ADVISORY_LOCK_OUTCOMES = ['success', 'timeout', 'error'] as const;
/** §6.3: transactions timed by buzz_db_transaction_duration_seconds (outcome `success` = committed, else `error`). */
export const TRANSACTION_OPERATIONS = [
  'replace_parameterized_event',
  'replace_addressable_event',
  'publish_nip43_membership_locked',
  'accept_push_lease_event',
  'begin_community_deletion_quiescing',
  'fence_community_deletion',
] as const;
export type TransactionOperation = (typeof TRANSACTION_OPERATIONS)[number];

/** §6.5: gauge roles (the fence-probe pool is deliberately not one). */
export const POOL_ROLES = ['writer', 'reader', 'audit', 'search'] as const;
export type PoolRole = (typeof POOL_ROLES)[number];

export interface PoolSample {
  readonly total: number;
  readonly idle: number;
  readonly max: number;
}

@Injectable()
export class DatabaseMetrics implements ConnectionStepSink {
  readonly routeDecision = counter({
    name: 'buzz_db_route_decision',
    help: 'Routed read decisions, exactly one per routed request',
    labelNames: ['path', 'decision', 'reason'],
  });
  readonly readerSpill = counter({
    name: 'buzz_db_reader_spill_total',
    help: 'Routed reads the replica could have served but the writer served',
    labelNames: ['path', 'reason'],
  });
  readonly readSessionDegraded = counter({
    name: 'buzz_db_read_session_degraded',
    help: 'Replica read sessions that degraded to the writer mid-request',
  });
  readonly operationDuration = histogram({
    name: 'buzz_db_operation_duration_seconds',
    help: 'Datastore span durations by span name',
    labelNames: ['operation', 'outcome'],
    buckets: SECONDS_BUCKETS,
  });
  readonly connectionStepStarted = counter({
    name: 'buzz_db_connection_step_started_total',
    help: 'Writer connection setup steps started (database.md §6.6)',
    labelNames: ['pool_role', 'step'],
  });
  readonly connectionStepAttempts = counter({
    name: 'buzz_db_connection_step_attempts_total',
    help: 'Writer connection setup steps by terminal outcome',
    labelNames: ['pool_role', 'step', 'outcome'],
  });
  readonly connectionStepDuration = histogram({
    name: 'buzz_db_connection_step_duration_seconds',
    help: 'Writer connection setup step durations',
    labelNames: ['pool_role', 'step'],
    buckets: SECONDS_BUCKETS,
  });
  readonly acquireStarted = counter({
    name: 'buzz_db_pool_acquire_started_total',
    help: 'Pool acquisitions started',
    labelNames: ['pool_role', 'operation'],
  });
  readonly acquireAttempts = counter({
    name: 'buzz_db_pool_acquire_attempts_total',
    help: 'Pool acquisitions by terminal outcome',
    labelNames: ['pool_role', 'operation', 'outcome'],
  });
  readonly acquireDuration = histogram({
    name: 'buzz_db_pool_acquire_duration_seconds',
    help: 'Pool acquisition wait',
    labelNames: ['pool_role', 'operation'],
    buckets: SECONDS_BUCKETS,
  });
  readonly acquireWaiters = gauge({
    name: 'buzz_db_pool_waiters',
    help: 'In-flight pool acquisitions',
    labelNames: ['pool_role', 'operation'],
  });
  /** Legacy families: emitted only by the seams that pre-date the operation labels (seed 000: with `operation`). */
  readonly legacyAcquireWait = histogram({
    name: 'buzz_db_pool_acquire_wait_seconds',
    help: 'Pool acquisition wait (compatibility family)',
    labelNames: ['pool_role', 'operation', 'outcome'],
    buckets: SECONDS_BUCKETS,
  });
  readonly legacyAcquisitions = counter({
    name: 'buzz_db_pool_acquisitions_total',
    help: 'Pool acquisitions (compatibility family)',
    labelNames: ['pool_role', 'operation', 'outcome'],
  });
  readonly advisoryLockWait = histogram({
    name: 'buzz_db_advisory_lock_wait_seconds',
    help: 'Time spent waiting for a transaction-scoped advisory lock (database.md §6.3)',
    labelNames: ['lock_type', 'outcome'],
    buckets: SECONDS_BUCKETS,
  });
  readonly advisoryLockAcquisitions = counter({
    name: 'buzz_db_advisory_lock_acquisitions_total',
    help: 'Advisory lock acquisitions by terminal outcome',
    labelNames: ['lock_type', 'outcome'],
  });
  readonly transactionDuration = histogram({
    name: 'buzz_db_transaction_duration_seconds',
    help: 'Duration of named writer transactions, begin to commit or rollback (database.md §6.3)',
    labelNames: ['operation', 'outcome'],
    buckets: SECONDS_BUCKETS,
  });
  readonly poolConnections = gauge({
    name: 'buzz_db_pool_connections',
    help: 'Pool connections by state',
    labelNames: ['pool_role', 'state'],
  });
  readonly poolMaxConnections = gauge({ name: 'buzz_db_pool_max_connections', help: 'Pool ceiling', labelNames: ['pool_role'] });
  readonly poolConfigured = gauge({ name: 'buzz_db_pool_configured', help: '1 when the pool role is configured', labelNames: ['pool_role'] });
  readonly compatWriter = {
    size: gauge({ name: 'buzz_db_pool_size', help: 'Writer pool connections' }),
    idle: gauge({ name: 'buzz_db_pool_idle', help: 'Writer pool idle connections' }),
    active: gauge({ name: 'buzz_db_pool_active', help: 'Writer pool active connections' }),
    max: gauge({ name: 'buzz_db_pool_max', help: 'Writer pool ceiling' }),
  };
  readonly compatReader = {
    size: gauge({ name: 'buzz_db_read_pool_size', help: 'Reader pool connections' }),
    idle: gauge({ name: 'buzz_db_read_pool_idle', help: 'Reader pool idle connections' }),
    active: gauge({ name: 'buzz_db_read_pool_active', help: 'Reader pool active connections' }),
    max: gauge({ name: 'buzz_db_read_pool_max', help: 'Reader pool ceiling' }),
  };
  readonly fenceOpen = gauge({ name: 'buzz_db_replica_fence_open', help: '1 while the replica fence has a live proof' });
  readonly fenceLag = gauge({ name: 'buzz_db_replica_fence_lag_seconds', help: 'now − newest fence wall, whole seconds (open fence only)' });
  readonly heartbeatAge = gauge({ name: 'buzz_db_replica_heartbeat_age_seconds', help: 'Age of the newest heartbeat proof (ungated)' });

  private readonly inflight = new Map<string, number>();

  /** The decision also lands on the read's datastore span, under the metric's label names. */
  recordRoute(path: RoutePathLabel, event: RouteEvent): void {
    this.routeDecision.inc({ path, decision: event.decision, reason: event.reason });
    trace.getActiveSpan()?.setAttributes({ path, decision: event.decision, reason: event.reason });
  }

  /** Runs `take` (one `pg_advisory_xact_lock…` statement) and records how long it waited and how it ended. */
  async advisoryLock<T>(lockType: AdvisoryLockType, take: () => Promise<T>): Promise<T> {
    const started = performance.now();
    const end = (outcome: (typeof ADVISORY_LOCK_OUTCOMES)[number]) => {
      this.advisoryLockWait.observe({ lock_type: lockType, outcome }, (performance.now() - started) / 1000);
      this.advisoryLockAcquisitions.inc({ lock_type: lockType, outcome });
    };
    try {
      const result = await take();
      end('success');
      return result;
    } catch (err) {
      end((err as { code?: unknown } | null)?.code === '55P03' ? 'timeout' : 'error');
      throw err;
    }
  }

  /** Times one writer transaction (`run` begins and commits it); outcome `error` when it rolled back. */
  async timeTransaction<T>(operation: TransactionOperation, run: () => Promise<T>): Promise<T> {
    const started = performance.now();
    const end = (outcome: 'success' | 'error') => this.transactionDuration.observe({ operation, outcome }, (performance.now() - started) / 1000);
    try {
      const result = await run();
      end('success');
      return result;
    } catch (err) {
      end('error');
      throw err;
    }
  }

  recordSpill(path: RoutePathLabel, reason: SpillReason): void {
    this.readerSpill.inc({ path, reason });
    trace.getActiveSpan()?.setAttribute('spill_reason', reason);
  }

  acquireBegin(a: PoolAcquire): void {
    this.acquireStarted.inc({ pool_role: a.poolRole, operation: a.operation });
    const key = `${a.poolRole}/${a.operation}`;
    this.inflight.set(key, (this.inflight.get(key) ?? 0) + 1);
  }

  stepStarted(step: ConnectionStep): void {
    this.connectionStepStarted.inc({ pool_role: 'writer', step });
  }

  stepEnded(step: ConnectionStep, outcome: ConnectionStepOutcome, seconds: number): void {
    this.connectionStepAttempts.inc({ pool_role: 'writer', step, outcome });
    this.connectionStepDuration.observe({ pool_role: 'writer', step }, seconds);
  }

  /** One terminal outcome per attempt; `legacy` seams also feed the compatibility families. */
  acquireEnd(a: PoolAcquire, outcome: AcquireOutcome, seconds: number, legacy: boolean): void {
    const labels = { pool_role: a.poolRole, operation: a.operation };
    const key = `${a.poolRole}/${a.operation}`;
    this.inflight.set(key, Math.max(0, (this.inflight.get(key) ?? 1) - 1));
    this.acquireAttempts.inc({ ...labels, outcome });
    this.acquireDuration.observe(labels, seconds);
    if (legacy && outcome !== 'cancelled') {
      this.legacyAcquireWait.observe({ ...labels, outcome }, seconds);
      this.legacyAcquisitions.inc({ ...labels, outcome });
    }
  }

  /** Republishes every valid pair (zeros included); reader pairs only with a reader pool. */
  publishWaiters(hasReader: boolean): void {
    const publish = (role: 'writer' | 'reader' | 'search', ops: readonly string[]) => {
      for (const op of ops) this.acquireWaiters.set({ pool_role: role, operation: op }, this.inflight.get(`${role}/${op}`) ?? 0);
    };
    publish('writer', WRITER_OPERATIONS);
    publish('search', SEARCH_OPERATIONS);
    if (hasReader) publish('reader', READER_OPERATIONS);
  }

  publishPools(samples: Partial<Record<PoolRole, PoolSample>>): void {
    for (const role of POOL_ROLES) {
      const s = samples[role];
      const active = s ? Math.max(0, s.total - s.idle) : 0;
      this.poolConnections.set({ pool_role: role, state: 'idle' }, s?.idle ?? 0);
      this.poolConnections.set({ pool_role: role, state: 'active' }, active);
      this.poolMaxConnections.set({ pool_role: role }, s?.max ?? 0);
      this.poolConfigured.set({ pool_role: role }, s ? 1 : 0);
    }
    publishCompat(this.compatWriter, samples.writer);
    publishCompat(this.compatReader, samples.reader);
  }

  publishFence(open: boolean, lagSeconds: number | undefined, heartbeatAgeSeconds: number | undefined): void {
    this.fenceOpen.set(open ? 1 : 0);
    if (open && lagSeconds !== undefined) this.fenceLag.set(lagSeconds);
    if (heartbeatAgeSeconds !== undefined) this.heartbeatAge.set(heartbeatAgeSeconds);
  }
}

function publishCompat(g: DatabaseMetrics['compatWriter'], s: PoolSample | undefined): void {
  g.size.set(s?.total ?? 0);
  g.idle.set(s?.idle ?? 0);
  g.active.set(s ? Math.max(0, s.total - s.idle) : 0);
  g.max.set(s?.max ?? 0);
}
