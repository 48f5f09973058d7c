import { DynamicModule, Global, Module } from '@nestjs/common';
import { AppConfig } from './app-config.js';
import { APP_CONFIG } from './config.tokens.js';

/** Provides the frozen AppConfig built once in main.ts (or by a test). */
@Global()
@Module({})
export class ConfigModule {
  static forRoot(config: AppConfig): DynamicModule {
    return {
      module: ConfigModule,
      providers: [{ provide: APP_CONFIG, useValue: config }],
      exports: [APP_CONFIG],
    };
  }
}
