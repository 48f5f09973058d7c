/**
 * What ReplicaFenceModule needs: whether this process runs its own probe, how often it beats,
 * and how often the pool and fence gauges are sampled. The staleness budget is the
 * RoutedReader's (RoutedReaderModule), not the fence's.
 */
import { rootModuleBuilder } from '../common/root-module-builder.js';

export interface ReplicaFenceModuleOptions {
  /**
   * Run this process's fence probe: one heartbeat `UPDATE` and one advisory lock on the writer
   * every interval, on one extra writer connection. Without it no proof exists in this process,
   * so every routed read goes to the writer (logged at start).
   */
  readonly probe: boolean;
  /** Beat interval, 300..10000 ms (default 500). */
  readonly probeIntervalMs?: number;
  /** How often the pool and fence gauges are republished, seconds (default 10). */
  readonly metricsIntervalSecs?: number;
  /**
   * Refuse to start without an open fence. With it, start-up (`app.init()`, `listen()`,
   * `createApplicationContext`) rejects with a ReplicaFenceStartError saying why when there is no
   * reader (`DatabaseModule` `readerUrl`), `probe` is off, a role lacks a privilege the fence
   * needs (README, "Privileges"), the floor guard cannot be verified, or the probe has
   * made no proof within `firstProofTimeoutMs`. Default false: the reason is logged once and
   * every routed read is served by the writer until the fence opens (a later GRANT is picked up
   * by the running probe).
   */
  readonly required?: boolean;
  /** With `required`: how long start-up waits for the probe's first proof, ms (default 10000). */
  readonly firstProofTimeoutMs?: number;
}

export const FENCE_METRICS_INTERVAL_DEFAULT_SECS = 10;
export const FIRST_PROOF_TIMEOUT_DEFAULT_MS = 10_000;

/** forRoot / forRootAsync (common/root-module-builder.ts). */
export const {
  ConfigurableModuleClass: ConfigurableReplicaFenceModule,
  MODULE_OPTIONS_TOKEN: REPLICA_FENCE_OPTIONS,
} = rootModuleBuilder<ReplicaFenceModuleOptions>('ReplicaFence');
