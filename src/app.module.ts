import { DynamicModule, Module } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { LoggerModule } from 'nestjs-pino';
import { BridgeModule } from './bridge/bridge.module.js';
import { CommandsModule } from './commands/commands.module.js';
import { HttpErrorFilter } from './common/http-error.filter.js';
import { AppConfig } from './config/app-config.js';
import { ConfigModule } from './config/config.module.js';
import { HealthModule } from './health/health.module.js';
import { MetricsModule } from './metrics/metrics.module.js';
import { RateLimitModule } from './ratelimit/rate-limit.module.js';
import { ScaleOutModule } from './scale-out/scale-out.module.js';
import { relayDatabaseModules } from './relay-database.modules.js';
import { SubscriptionsModule } from './subscriptions/subscriptions.module.js';
import { TenancyModule } from './tenancy/tenancy.module.js';

@Module({})
export class AppModule {
  static forRoot(config: AppConfig): DynamicModule {
    return {
      module: AppModule,
      imports: [
        ConfigModule.forRoot(config),
        LoggerModule.forRoot({
          pinoHttp: {
            level: config.logLevel,
            // The one line per request is HttpObserver's (every route, 404s included). Loggers
            // bound to a request carry only its id: no headers, no body.
            autoLogging: false,
            quietReqLogger: true,
            serializers: { req: (req: { id?: unknown; method?: unknown }) => ({ id: req.id, method: req.method }) },
            redact: ['req.headers.authorization', 'req.headers.cookie', 'req.headers["x-pubkey"]'],
          },
        }),
        MetricsModule,
        RateLimitModule,
        ...relayDatabaseModules(config),
        TenancyModule,
        // The executed kinds: without it ingest would store them like any other event.
        CommandsModule,
        SubscriptionsModule,
        BridgeModule,
        HealthModule,
        ScaleOutModule,
      ],
      // The relay's one HTTP error format (database failures in the database layer's answers).
      providers: [{ provide: APP_FILTER, useClass: HttpErrorFilter }],
    };
  }
}
