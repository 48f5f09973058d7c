/**
 * What HistoryReadsModule needs: the reader pool size its permit count is derived from, the
 * tenant share, and the heavy reads' bound.
 */
import { rootModuleBuilder } from '../common/root-module-builder.js';

export interface HistoryReadsModuleOptions {
  /** The reader pool's ceiling; the gate admits `max(1, floor(4n/5))` history reads at once. */
  readonly readPoolSize: number;
  /**
   * Most of the gate's permits one tenant (the relay: one key) may hold at once, in percent
   * (1..100, default 100: no share). See common/permit-gate.ts for how permits are shared.
   */
  readonly tenantSharePercent?: number;
  /**
   * How many of the admitted reads may be heavy (RouteRequest.heavy) at once, 1..the cap
   * (default a quarter of the cap, at least one).
   */
  readonly heavyReadCap?: number;
}

/** forRoot / forRootAsync (common/root-module-builder.ts). */
export const {
  ConfigurableModuleClass: ConfigurableHistoryReadsModule,
  MODULE_OPTIONS_TOKEN: HISTORY_READS_OPTIONS,
} = rootModuleBuilder<HistoryReadsModuleOptions>('HistoryReads');
