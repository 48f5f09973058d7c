/**
 * The read path as one module: `ReadPathModule.forRoot({ database, fence, routing })` (or
 * `forRootAsync`) registers DatabaseModule, ReplicaFenceModule, HistoryReadsModule and
 * RoutedReaderModule from one option set, so what two of them must agree on is said once: the
 * reader pool size (the history-read gate's permits follow `database.readPoolSize`, or its
 * default) and the tenant share (`routing.tenantSharePercent` divides both read gates). The four
 * stay importable one by one for an app that wires them itself (the package README).
 */
import { DynamicModule, InjectionToken, Module, ModuleMetadata, OptionalFactoryDependency } from '@nestjs/common';
import { DatabaseModule } from './database/database.module.js';
import { type DatabaseModuleOptions, poolSettings } from './database/database.options.js';
import { HistoryReadsModule } from './history-reads/history-reads.module.js';
import { ReplicaFenceModule } from './replica-fence/replica-fence.module.js';
import type { ReplicaFenceModuleOptions } from './replica-fence/replica-fence.options.js';
import { RoutedReaderModule } from './routing/routed-reader.module.js';
import type { RoutedReaderModuleOptions } from './routing/routed-reader.options.js';

export interface ReadPathModuleOptions {
  /** The pools and the opt-in jobs (DatabaseModule). `readPoolSize` also sizes the history-read gate. */
  readonly database: DatabaseModuleOptions;
  /**
   * The fence probe (ReplicaFenceModule); default `{ probe: true }`: this process proves the
   * replica's freshness itself. `{ probe: true, required: true }` makes start-up fail when the
   * fence cannot open instead of serving every routed read from the writer.
   */
  readonly fence?: ReplicaFenceModuleOptions;
  /** The staleness budget and the writer-read caps (RoutedReaderModule). `tenantSharePercent` also divides the history-read gate. */
  readonly routing: RoutedReaderModuleOptions;
}

export interface ReadPathModuleAsyncOptions {
  readonly imports?: ModuleMetadata['imports'];
  readonly inject?: Array<InjectionToken | OptionalFactoryDependency>;
  readonly useFactory: (...args: any[]) => ReadPathModuleOptions | Promise<ReadPathModuleOptions>;
}

/** The resolved options, provided once and read by each of the four modules' factories. */
export const READ_PATH_OPTIONS = Symbol('READ_PATH_OPTIONS');

@Module({})
class ReadPathOptionsModule {}

@Module({})
export class ReadPathModule {
  static forRoot(options: ReadPathModuleOptions): DynamicModule {
    return ReadPathModule.forRootAsync({ useFactory: () => options });
  }

  static forRootAsync(async: ReadPathModuleAsyncOptions): DynamicModule {
    const options: DynamicModule = {
      module: ReadPathOptionsModule,
      imports: async.imports ?? [],
      providers: [{ provide: READ_PATH_OPTIONS, inject: async.inject ?? [], useFactory: async.useFactory }],
      exports: [READ_PATH_OPTIONS],
    };
    const part = <T>(pick: (o: ReadPathModuleOptions) => T) => ({ imports: [options], inject: [READ_PATH_OPTIONS], useFactory: pick });
    return {
      module: ReadPathModule,
      imports: [
        DatabaseModule.forRootAsync(part((o) => o.database)),
        ReplicaFenceModule.forRootAsync(part((o) => o.fence ?? { probe: true })),
        HistoryReadsModule.forRootAsync(part((o) => ({ readPoolSize: poolSettings(o.database).readPoolSize, tenantSharePercent: o.routing.tenantSharePercent, heavyReadCap: o.routing.historyHeavyReadCap }))),
        RoutedReaderModule.forRootAsync(part((o) => o.routing)),
      ],
    };
  }
}
