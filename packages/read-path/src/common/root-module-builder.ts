/**
 * The database library's modules are root modules: registered once, with `forRoot(options)` or
 * `forRootAsync({ useFactory, inject, imports })`, and global, the way an ORM's root module is,
 * so the modules built on them (and the importer's own providers) inject their services without
 * importing them again.
 */
import { ConfigurableModuleBuilder } from '@nestjs/common';

export function rootModuleBuilder<Options>(moduleName: string) {
  return new ConfigurableModuleBuilder<Options>({ moduleName })
    .setClassMethodName('forRoot')
    .setExtras({}, (definition) => ({ ...definition, global: true }))
    .build();
}
