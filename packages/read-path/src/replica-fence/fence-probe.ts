/**
 * One probe beat (database.md §4.3; seed 001 fixes the order): on the probe pool's one
 * connection and in one transaction, take the replica-floor lock exclusive, sample the writer
 * clock S, scan for the oldest open transaction, then commit the heartbeat token last.
 * `committedAt` is captured before the UPDATE round trip, so ages over-estimate.
 */
import { performance } from 'node:perf_hooks';
import { Span } from '@opentelemetry/api';
import { Pool, PoolClient } from 'pg';
import { CREATED_AT_FLOOR_SECS, FENCE_CLOCK_MARGIN_SECS, REPLICA_FLOOR_LOCK_KEY } from '../database/constants.js';
import { loopFairDeadline } from '../common/loop-fair-deadline.js';
import { PoolTimeoutError, toDatabaseError } from '../database/database-errors.js';
import type { DatabaseMetrics } from '../metrics/database-metrics.service.js';
import { datastoreSpan } from '../metrics/datastore-span.js';
import { PROBE_DEADLINE_MS } from './replica-fence.constants.js';

export type ProbeErrorKind =
  | 'acquire_timeout'
  | 'lock_timeout'
  | 'statement_timeout'
  | 'deadline'
  | 'masked_activity'
  | 'heartbeat_row_missing'
  | 'connection'
  | 'other';

export interface ProbeTimings {
  acquireMs?: number;
  lockMs?: number;
  scanMs?: number;
  heartbeatMs?: number;
  commitMs?: number;
}

export interface ProbeSample {
  readonly token: bigint;
  readonly epoch: string;
  readonly committedAt: number;
  /** Writer-clock epoch ms. */
  readonly fenceWall: number;
  /** S: the writer clock sampled under the exclusive floor lock (epoch ms). */
  readonly sampledAt: number;
  readonly timings: ProbeTimings;
}

export class ProbeError extends Error {
  constructor(
    readonly kind: ProbeErrorKind,
    message: string,
    readonly timings: ProbeTimings,
    readonly code?: string,
  ) {
    super(message);
    this.name = 'ProbeError';
  }
}

const WALL_OFFSET_MS = (CREATED_AT_FLOOR_SECS + FENCE_CLOCK_MARGIN_SECS) * 1000;

/** `wall = min(oldest xact start, S) − 960 s − 5 s`, in writer-clock epoch ms. */
export function fenceWallMs(sampledAt: Date, oldest: Date | null): number {
  const base = oldest === null ? sampledAt.getTime() : Math.min(oldest.getTime(), sampledAt.getTime());
  return base - WALL_OFFSET_MS;
}

/**
 * Runs one beat under the client-side deadline. Rejects with ProbeError. The deadline times the
 * writer, not this process: a beat whose answers arrived while the event loop was held is read
 * before it is declared late (common/loop-fair-deadline.ts).
 */
export async function probeOnce(pool: Pool, metrics: DatabaseMetrics, span: Span): Promise<ProbeSample> {
  const timings: ProbeTimings = {};
  let client: PoolClient | undefined;
  let expired = false;
  const beat = (async () => {
    const acquired = await acquire(pool, metrics, timings);
    if (expired) {
      acquired.release();
      throw new ProbeError('deadline', 'probe deadline expired during acquire', timings);
    }
    client = acquired;
    return runBeat(acquired, metrics, timings);
  })();
  beat.catch(() => undefined);
  try {
    const sample = await loopFairDeadline(beat, PROBE_DEADLINE_MS, () => {
      expired = true;
      return new ProbeError('deadline', `probe beat exceeded its ${PROBE_DEADLINE_MS} ms deadline`, timings);
    });
    client?.release();
    return sample;
  } catch (err) {
    const failure = err instanceof ProbeError ? err : classify(err, timings);
    span.setAttribute('error_kind', failure.kind);
    // A failed beat's session may still hold the exclusive lock or sit mid-transaction: destroy it.
    client?.release(failure);
    throw failure;
  }
}

async function acquire(pool: Pool, metrics: DatabaseMetrics, timings: ProbeTimings): Promise<PoolClient> {
  const started = performance.now();
  try {
    return await datastoreSpan(metrics, 'replica_fence_probe_acquire', () => pool.connect());
  } catch (err) {
    throw classify(err, timings);
  } finally {
    timings.acquireMs = performance.now() - started;
  }
}

async function runBeat(client: PoolClient, metrics: DatabaseMetrics, timings: ProbeTimings): Promise<ProbeSample> {
  try {
    await client.query('BEGIN');
    await timed(timings, 'lockMs', () =>
      datastoreSpan(metrics, 'replica_fence_probe_lock', () => client.query('select pg_advisory_xact_lock($1::bigint)', [REPLICA_FLOOR_LOCK_KEY.toString()])),
    );
    // S is its own statement, after the lock and before the scan: the order is the proof.
    const { rows: clockRows } = await client.query<{ s: Date }>('select clock_timestamp() as s');
    const scan = await timed(timings, 'scanMs', () => scanActivity(client));
    if (scan.masked > 0) {
      throw new ProbeError('masked_activity', `${scan.masked} backends are masked in pg_stat_activity: probe role needs pg_monitor`, timings);
    }
    const committedAt = performance.now();
    const hb = await timed(timings, 'heartbeatMs', () => bumpToken(client));
    if (!hb) throw new ProbeError('heartbeat_row_missing', 'replica_heartbeat row missing (migration 0014 not applied?)', timings);
    await timed(timings, 'commitMs', () => client.query('COMMIT'));
    return { token: hb.token, epoch: hb.epoch, committedAt, fenceWall: fenceWallMs(clockRows[0].s, scan.oldest), sampledAt: clockRows[0].s.getTime(), timings };
  } catch (err) {
    throw err instanceof ProbeError ? err : classify(err, timings);
  }
}

interface ActivityScan {
  oldest: Date | null;
  masked: number;
}

/**
 * Every other backend of any role and application counts (autovacuum too: conservative).
 * 2PC transactions have left the activity view but can still commit, so pg_prepared_xacts
 * joins the minimum. `backend_type` is not filtered first: unprivileged views mask it too.
 */
async function scanActivity(client: PoolClient): Promise<ActivityScan> {
  const { rows } = await client.query<{ oldest: Date | null; masked: string }>(`
    select least(
             -- Any backend's open transaction counts (database.md §4.2 step 5): background
             -- workers and logical-replication apply workers can write events too.
             (select min(xact_start) from pg_stat_activity where pid <> pg_backend_pid()),
             (select min(prepared) from pg_prepared_xacts)
           ) as oldest,
           (select count(*) from pg_stat_activity
             where pid <> pg_backend_pid()
               and (backend_type is null
                    or (backend_type = 'client backend' and state is null)
                    or (backend_type = 'client backend' and state <> 'idle' and xact_start is null))) as masked`);
  return { oldest: rows[0].oldest, masked: Number(rows[0].masked) };
}

async function bumpToken(client: ClientLike): Promise<{ token: bigint; epoch: string } | undefined> {
  const { rows } = await client.query<{ token: string; epoch: string }>(
    'update replica_heartbeat set token = token + 1 where id = 1 returning token::text as token, epoch::text as epoch',
  );
  return rows[0] ? { token: BigInt(rows[0].token), epoch: rows[0].epoch } : undefined;
}

type ClientLike = Pick<PoolClient, 'query'>;

/** §4.3 step 9: after a same-epoch regression, rotate the epoch in autocommit on the probe pool. */
export async function rotateEpoch(pool: Pool): Promise<{ token: bigint; epoch: string; committedAt: number }> {
  const client = await pool.connect();
  try {
    const committedAt = performance.now();
    const { rows } = await client.query<{ token: string; epoch: string }>(
      'update replica_heartbeat set epoch = gen_random_uuid(), token = token + 1 where id = 1 returning token::text as token, epoch::text as epoch',
    );
    if (!rows[0]) throw new ProbeError('heartbeat_row_missing', 'replica_heartbeat row missing', {});
    client.release();
    return { token: BigInt(rows[0].token), epoch: rows[0].epoch, committedAt };
  } catch (err) {
    client.release(err as Error);
    throw err;
  }
}

async function timed<T>(timings: ProbeTimings, field: keyof ProbeTimings, fn: () => Promise<T>): Promise<T> {
  const started = performance.now();
  try {
    return await fn();
  } finally {
    timings[field] = performance.now() - started;
  }
}

function classify(err: unknown, timings: ProbeTimings): ProbeError {
  const e = err as { code?: unknown; message?: unknown };
  const code = typeof e?.code === 'string' ? e.code : undefined;
  const message = typeof e?.message === 'string' ? e.message : String(err);
  if (toDatabaseError(err) instanceof PoolTimeoutError) return new ProbeError('acquire_timeout', message, timings, code);
  if (code === '55P03') return new ProbeError('lock_timeout', message, timings, code);
  if (code === '57014') return new ProbeError('statement_timeout', message, timings, code);
  if (code === '25P03' || code?.startsWith('08') || /^57P0[1-3]$/.test(code ?? '') || /^E[A-Z]+$/.test(code ?? '') || /Connection terminated|not queryable/.test(message)) {
    return new ProbeError('connection', message, timings, code);
  }
  return new ProbeError('other', message, timings, code);
}

