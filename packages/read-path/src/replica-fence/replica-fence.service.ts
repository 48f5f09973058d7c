/**
 * ReplicaFenceService: boot gating, the probe loop and the fence gauges (database.md §4).
 * The probe runs only when the options ask for it, with a reader configured and a verified floor
 * guard; it beats on its own one-connection pool (seed 001), never on a serving writer connection.
 */
import { performance } from 'node:perf_hooks';
import { BeforeApplicationShutdown, Inject, Injectable, Logger } from '@nestjs/common';
import type { Pool } from 'pg';
import { DatabaseService } from '../database/database.service.js';
import { endPool } from '../database/pools.js';
import { DatabaseMetrics } from '../metrics/database-metrics.service.js';
import { datastoreSpan } from '../metrics/datastore-span.js';
import { probeOnce, ProbeError, ProbeSample, rotateEpoch } from './fence-probe.js';
import { checkFencePrivileges, connectionRole, type FencePrivilegeReport, fencePrivilegeShortfall } from './fence-privileges.js';
import { verifyFloorGuardBehavior, verifyFloorGuardCatalog } from './floor-guard-verifier.js';
import { ProbeFailureLog } from './probe-failure-log.js';
import { createProbePool } from './probe-pool.js';
import { ProofRing } from './proof-ring.js';
import { PROBE_INTERVAL_DEFAULT_MS, PROBE_INTERVAL_MAX_MS, PROBE_INTERVAL_MIN_MS } from './replica-fence.constants.js';
import { FENCE_METRICS_INTERVAL_DEFAULT_SECS, FIRST_PROOF_TIMEOUT_DEFAULT_MS, REPLICA_FENCE_OPTIONS } from './replica-fence.options.js';
import { ReplicaFenceStartError } from './replica-fence-start-error.js';
import type { ReplicaFenceModuleOptions } from './replica-fence.options.js';

export type FenceState = 'disabled' | 'unverified' | 'running' | 'stopped';

@Injectable()
export class ReplicaFenceService implements BeforeApplicationShutdown {
  readonly ring = new ProofRing();
  private readonly logger = new Logger('ReplicaFence');
  private readonly failures = new ProbeFailureLog();
  private state: FenceState = 'disabled';
  private timer: NodeJS.Timeout | undefined;
  private sampler: NodeJS.Timeout | undefined;
  private lastBeatAt: number | undefined;
  private beats = 0;
  private running: Promise<void> | undefined;
  private readonly beatWaiters = new Set<() => void>();
  private probe: Pool | undefined;
  private lastFailure: ProbeError | undefined;
  /** Beat interval, ms. */
  readonly probeIntervalMs: number;

  constructor(
    @Inject(REPLICA_FENCE_OPTIONS) private readonly options: ReplicaFenceModuleOptions,
    private readonly db: DatabaseService,
    private readonly metrics: DatabaseMetrics,
  ) {
    this.probeIntervalMs = options.probeIntervalMs ?? PROBE_INTERVAL_DEFAULT_MS;
    if (!Number.isInteger(this.probeIntervalMs) || this.probeIntervalMs < PROBE_INTERVAL_MIN_MS || this.probeIntervalMs > PROBE_INTERVAL_MAX_MS) {
      throw new RangeError(`ReplicaFenceModule: probeIntervalMs must be an integer in ${PROBE_INTERVAL_MIN_MS}..${PROBE_INTERVAL_MAX_MS}, got ${this.probeIntervalMs}`);
    }
    const firstProof = options.firstProofTimeoutMs;
    if (firstProof !== undefined && (!Number.isInteger(firstProof) || firstProof <= 0)) {
      throw new RangeError(`ReplicaFenceModule: firstProofTimeoutMs must be a positive integer, got ${firstProof}`);
    }
    db.afterStart(() => this.spawn());
  }

  /** Whether this process proves replica freshness at all: a probe asked for and a reader to prove. */
  get probes(): boolean {
    return this.options.probe && this.db.hasReader;
  }

  getState(): FenceState {
    return this.state;
  }

  /** Successful beats since start (tests wait on this instead of sleeping). */
  beatCount(): number {
    return this.beats;
  }

  /** Resolves after `n` more successful beats, or rejects after timeoutMs. */
  waitForBeats(n: number, timeoutMs = 10_000): Promise<void> {
    const target = this.beats + n;
    return new Promise((resolve, reject) => {
      const check = () => {
        if (this.beats < target) return;
        this.beatWaiters.delete(check);
        clearTimeout(t);
        resolve();
      };
      const t = setTimeout(() => {
        this.beatWaiters.delete(check);
        reject(new Error(`no ${n} fence beats within ${timeoutMs} ms (state ${this.state})`));
      }, timeoutMs);
      this.beatWaiters.add(check);
    });
  }

  /**
   * §4.1: returns true when the probe loop was started. Called at the end of DatabaseService's
   * start, after the migration decision. Failures are logged; the fence stays closed. Without a
   * probe (none asked for, or no reader) the log says where routed reads go. With `required`,
   * a fence that cannot open rejects instead (ReplicaFenceStartError), and so does start-up.
   */
  async spawn(): Promise<boolean> {
    this.startSampler();
    if (!this.db.hasReader) {
      this.logger.log('no reader configured: every routed read is served by the writer');
      return this.refuse('DatabaseModule readerUrl is not set: there is no replica to prove');
    }
    if (!this.options.probe) {
      this.logger.warn('replica fence probe off (probe: false): no freshness proof in this process, so every routed read is served by the writer');
      return this.refuse('ReplicaFenceModule probe is off: no proof exists in this process');
    }
    const shortfall = await this.checkPrivileges().catch((err: unknown) => {
      if (this.options.required) throw new ReplicaFenceStartError(`the privilege check failed: ${String(err)}`, { cause: err });
      this.logger.warn({ err }, 'replica fence privilege check failed; starting the probe anyway');
      return undefined;
    });
    if (shortfall && this.options.required) throw new ReplicaFenceStartError(`the fence cannot open: ${shortfall}`);
    try {
      await this.verifyFloorGuard();
    } catch (err) {
      this.state = 'unverified';
      if (this.options.required) throw new ReplicaFenceStartError(`the floor guard could not be verified: ${(err as Error).message}`, { cause: err });
      this.logger.error({ err }, 'replica fence floor guard verification failed; fence stays closed and routed reads use the writer');
      return false;
    }
    this.state = 'running';
    this.schedule(0);
    if (this.options.required) await this.firstProof();
    return true;
  }

  /** Without `required`: false (the caller has logged why). With it: rejects, saying why. */
  private refuse(reason: string): false {
    if (this.options.required) throw new ReplicaFenceStartError(reason);
    return false;
  }

  /** `required`: waits for the first proof; without one in time, stops the probe and rejects with the last beat's failure. */
  private async firstProof(): Promise<void> {
    const within = this.options.firstProofTimeoutMs ?? FIRST_PROOF_TIMEOUT_DEFAULT_MS;
    try {
      await this.waitForBeats(1, within);
    } catch {
      await this.beforeApplicationShutdown();
      const last = this.lastFailure;
      throw new ReplicaFenceStartError(`no proof within firstProofTimeoutMs ${within}${last ? `; the last beat failed (${last.kind}): ${last.message}` : ''}`, { cause: last });
    }
  }

  /**
   * Asks the writer's catalog for what the probe, the floor-guard self-test and a routed read's
   * proof need, and logs one error naming each missing privilege and its role. Returns what is
   * missing (undefined when nothing is). The probe still starts: a later GRANT opens the fence.
   */
  async checkPrivileges(): Promise<string | undefined> {
    const readerUrl = this.db.readerUrl;
    const client = await this.db.acquireWriter('bootstrap');
    let report: FencePrivilegeReport;
    try {
      report = await checkFencePrivileges(client, readerUrl === undefined ? undefined : connectionRole(readerUrl));
      client.release();
    } catch (err) {
      client.release(err as Error);
      throw err;
    }
    const shortfall = fencePrivilegeShortfall(report);
    if (shortfall) this.logger.error(`ReplicaFenceModule cannot open the fence: ${shortfall}. Until then every routed read is served by the writer`);
    return shortfall;
  }

  async verifyFloorGuard(): Promise<void> {
    const client = await this.db.acquireWriter('bootstrap');
    try {
      await datastoreSpan(this.metrics, 'replica_fence_verify_catalog', () => verifyFloorGuardCatalog(client));
      await datastoreSpan(this.metrics, 'replica_fence_verify_behavior', () => verifyFloorGuardBehavior(client));
      client.release();
    } catch (err) {
      client.release(err as Error);
      throw err;
    }
  }

  /** One beat, recorded into the ring: the loop's step. */
  protected async beat(): Promise<ProbeSample | ProbeError> {
    const started = performance.now();
    const gap = this.lastBeatAt === undefined ? undefined : started - this.lastBeatAt;
    this.lastBeatAt = started;
    return datastoreSpan(this.metrics, 'replica_fence_probe', async (span) => {
      if (gap !== undefined) span.setAttribute('beat_gap_ms', Math.round(gap));
      const outcome = await probeOnce(this.probePool(), this.metrics, span).catch((err: unknown) =>
        err instanceof ProbeError ? err : new ProbeError('other', String(err), {}),
      );
      const phases = phaseFields(outcome.timings);
      for (const [k, v] of Object.entries(phases)) span.setAttribute(k, v);
      if (outcome instanceof ProbeError) {
        this.onFailure(outcome, gap === undefined ? phases : { ...phases, beat_gap_ms: Math.round(gap) });
        throw outcome;
      }
      span.setAttribute('token', outcome.token.toString());
      await this.record(outcome);
      return outcome;
    }).catch((err: unknown) => (err instanceof ProbeError ? err : new ProbeError('other', String(err), {})));
  }

  /** Stops the loop (the ring keeps its proofs, which age out). */
  async stopProbe(): Promise<void> {
    this.state = this.state === 'running' ? 'stopped' : this.state;
    clearTimeout(this.timer);
    await this.running;
  }

  /** Stops the loop, then ends the probe's own pool (the serving pools end later, at onApplicationShutdown). */
  async beforeApplicationShutdown(): Promise<void> {
    clearInterval(this.sampler);
    await this.stopProbe();
    const probe = this.probe;
    this.probe = undefined;
    if (probe) await endPool(probe);
  }

  /** Publishes the fence gauges (and pool gauges) now. */
  sample(): void {
    const hasReader = this.db.hasReader;
    this.metrics.publishPools(this.db.poolSamples());
    this.metrics.publishWaiters(hasReader);
    if (!hasReader) return;
    const wall = this.ring.verifiedThrough();
    const age = this.ring.heartbeatAgeMs();
    const lag = wall === undefined ? undefined : Math.floor((Date.now() - wall) / 1000);
    this.metrics.publishFence(wall !== undefined, lag, age === undefined ? undefined : age / 1000);
  }

  private async record(sample: ProbeSample): Promise<void> {
    const outcome = this.ring.record(sample.token, sample.epoch, sample.committedAt, sample.fenceWall);
    if (outcome === 'token_regression') {
      this.logger.warn({ token: sample.token.toString(), epoch: sample.epoch }, 'replica heartbeat token regressed within its epoch (restore?); rotating epoch');
      const rotated = await rotateEpoch(this.probePool());
      this.ring.record(rotated.token, rotated.epoch, rotated.committedAt, sample.fenceWall);
    }
    const ended = this.failures.succeeded();
    if (ended > 0) this.logger.log({ consecutive_failures: ended, token: sample.token.toString() }, 'replica fence probe recovered');
    this.beats += 1;
    // The gauges show the open fence from the first beat, not from the next sampling tick.
    if (this.beats === 1) this.sample();
    for (const w of [...this.beatWaiters]) w();
  }

  /** Seed 001's warning: its field names, snake_case, exactly (log alerts key on them). */
  private onFailure(err: ProbeError, phases: Record<string, number>): void {
    this.lastFailure = err;
    const { consecutiveFailures, warn } = this.failures.failed(performance.now());
    if (!warn) return;
    const age = this.ring.heartbeatAgeMs();
    this.logger.warn(
      {
        error_kind: err.kind,
        consecutive_failures: consecutiveFailures,
        heartbeat_age_ms: age === undefined ? null : Math.round(age),
        ...phases,
        err,
      },
      'replica fence probe failed',
    );
  }

  /** Missed ticks are delayed, not burst: the next beat is one interval after the last began. */
  private schedule(delayMs: number): void {
    if (this.state !== 'running') return;
    this.timer = setTimeout(() => {
      const started = performance.now();
      this.running = this.beat().then(() => {
        this.running = undefined;
        this.schedule(Math.max(0, this.probeIntervalMs - (performance.now() - started)));
      });
    }, delayMs);
    this.timer.unref();
  }

  private startSampler(): void {
    this.sample();
    this.sampler = setInterval(() => this.sample(), (this.options.metricsIntervalSecs ?? FENCE_METRICS_INTERVAL_DEFAULT_SECS) * 1000);
    this.sampler.unref();
  }

  /** The probe's lazy one-connection pool (seed 001), created at the first beat. */
  private probePool(): Pool {
    this.probe ??= createProbePool(this.db.writerUrl, this.db.onPoolError);
    return this.probe;
  }
}

/** The per-phase timings under seed 001's names, in whole milliseconds; phases not reached are absent. */
export function phaseFields(t: ProbeError['timings']): Record<string, number> {
  const named: [string, number | undefined][] = [
    ['acquire_ms', t.acquireMs],
    ['lock_ms', t.lockMs],
    ['scan_ms', t.scanMs],
    ['heartbeat_ms', t.heartbeatMs],
    ['commit_ms', t.commitMs],
  ];
  const out: Record<string, number> = {};
  for (const [k, v] of named) if (v !== undefined) out[k] = Math.round(v);
  return out;
}
