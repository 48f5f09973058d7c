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
}

export const FENCE_METRICS_INTERVAL_DEFAULT_SECS = 10;

/** forRoot / forRootAsync (common/root-module-builder.ts). */
export const {
  ConfigurableModuleClass: ConfigurableReplicaFenceModule,
  MODULE_OPTIONS_TOKEN: REPLICA_FENCE_OPTIONS,
} = rootModuleBuilder<ReplicaFenceModuleOptions>('ReplicaFence');
