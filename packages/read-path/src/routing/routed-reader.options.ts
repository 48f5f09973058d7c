/**
 * What RoutedReaderModule needs: the staleness budget bounded reads accept, and the cap and
 * deadline of client-driven reads served by the writer.
 */
import { rootModuleBuilder } from '../common/root-module-builder.js';

export interface RoutedReaderModuleOptions {
  /**
   * Staleness budget B, ms: a bounded read goes to the replica only with a proof at most this
   * old. 0 = bounded reads stay on the writer (covered reads still route). At least the probe
   * interval + 1200 ms, or one late beat spills reads to the writer (warned at start).
   */
  readonly readMaxAgeMs: number;
  /**
   * How many client-driven reads may hold writer connections at once, so the rest of the writer
   * pool stays for writes (default half the writer pool, at least 1).
   */
  readonly writerReadCap?: number;
  /**
   * How many of those reads may be heavy (WriterReadOptions.heavy: a filter of many values) at
   * once (default 1), so expensive filters cannot take the writer's CPU from writes.
   */
  readonly writerHeavyReadCap?: number;
  /**
   * How many replica history reads may be heavy at once (default a quarter of the history-read
   * cap, at least one); ReadPathModule hands it to HistoryReadsModule as `heavyReadCap`.
   */
  readonly historyHeavyReadCap?: number;
  /**
   * Most of the writer-read cap one tenant (a read's `tenant`) may hold at once, in percent
   * (1..100, default 100: no share); the history-read gate takes its own from HistoryReadsModule.
   */
  readonly tenantSharePercent?: number;
  /** Statement deadline of a client-driven read on the writer, ms (default 20000). */
  readonly clientReadTimeoutMs?: number;
  /**
   * The importer's own `path` labels for buzz_db_route_decision (lower snake case), added to the
   * relay's; the set closes at the first routed read (route-paths.ts).
   */
  readonly routePathLabels?: readonly string[];
}

export const WRITER_READ_TIMEOUT_DEFAULT_MS = 20_000;

/** forRoot / forRootAsync (common/root-module-builder.ts). */
export const {
  ConfigurableModuleClass: ConfigurableRoutedReaderModule,
  MODULE_OPTIONS_TOKEN: ROUTED_READER_OPTIONS,
} = rootModuleBuilder<RoutedReaderModuleOptions>('RoutedReader');
