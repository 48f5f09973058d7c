/**
 * `GET /metrics` on an operator listener of its own (`BUZZ_METRICS_HOST`:`BUZZ_METRICS_PORT`,
 * default 127.0.0.1:9102), never on the public port: the exposition names every tenant's
 * community id with its connection count. The listener is a small Nest application of its own
 * that serves `@willsoto/nestjs-prometheus`'s controller over the process's default registry (the
 * relay's families and Node's, registered by MetricsModule). It stays up while the relay drains,
 * so the last scrape sees the shutdown, and closes with the application.
 */
import { Inject, Injectable, LoggerService, Module, OnApplicationShutdown } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { PrometheusModule } from '@willsoto/nestjs-prometheus';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { AppConfig } from '../config/app-config.js';
import { APP_CONFIG } from '../config/config.tokens.js';

export const METRICS_PATH = '/metrics';

/** The operator listener's application: the exposition and nothing else (any other path is 404). */
@Module({ imports: [PrometheusModule.register({ path: METRICS_PATH, defaultMetrics: { enabled: false } })] })
class OperatorMetricsModule {}

@Injectable()
export class MetricsListener implements OnApplicationShutdown {
  private app: NestFastifyApplication | undefined;

  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {}

  /**
   * Opens the listener; a taken port fails start-up. Resolves with `http://host:port/metrics`.
   * `logger` is the relay's own: Nest's logger is process-wide, and `logger: false` here would
   * silence every `new Logger(…)` of the relay from then on.
   */
  async listen(logger: LoggerService): Promise<string> {
    const http = this.config.http;
    const app = await NestFactory.create<NestFastifyApplication>(
      OperatorMetricsModule,
      new FastifyAdapter({ requestTimeout: http.requestTimeoutMs, connectionTimeout: http.idleTimeoutMs }),
      { logger },
    );
    await app.listen(this.config.metrics.port, this.config.metrics.host);
    const server = app.getHttpServer() as Server;
    server.headersTimeout = http.headersTimeoutMs;
    this.app = app;
    const { address, port } = server.address() as AddressInfo;
    return `http://${address.includes(':') ? `[${address}]` : address}:${port}${METRICS_PATH}`;
  }

  async onApplicationShutdown(): Promise<void> {
    const app = this.app;
    this.app = undefined;
    if (!app) return;
    (app.getHttpServer() as Server).closeAllConnections();
    await app.close();
  }
}
