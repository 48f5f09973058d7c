/**
 * What HistoryReadsModule needs: the reader pool size its permit count is derived from.
 */
import { ConfigurableModuleBuilder } from '@nestjs/common';

export interface HistoryReadsModuleOptions {
  /** The reader pool's ceiling; the gate admits `max(1, floor(4n/5))` history reads at once. */
  readonly readPoolSize: number;
}

/** forRoot / forRootAsync; global like DatabaseModule (registered once, at the root). */
export const {
  ConfigurableModuleClass: ConfigurableHistoryReadsModule,
  MODULE_OPTIONS_TOKEN: HISTORY_READS_OPTIONS,
} = new ConfigurableModuleBuilder<HistoryReadsModuleOptions>({ moduleName: 'HistoryReads' })
  .setClassMethodName('forRoot')
  .setExtras({}, (definition) => ({ ...definition, global: true }))
  .build();
