/**
 * `GET /metrics` on an operator listener of its own (`BUZZ_METRICS_HOST`:`BUZZ_METRICS_PORT`,
 * default 127.0.0.1:9102), never on the public port: the exposition names every tenant's
 * community id with its connection count. It stays up while the relay drains, so the last
 * scrape sees the shutdown, and closes with the application.
 */
import { Inject, Injectable, OnApplicationShutdown } from '@nestjs/common';
import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { register } from 'prom-client';
import type { AppConfig } from '../config/app-config.js';
import { APP_CONFIG } from '../config/config.tokens.js';

export const METRICS_PATH = '/metrics';

@Injectable()
export class MetricsListener implements OnApplicationShutdown {
  private server: Server | undefined;

  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {}

  /** Opens the listener; a taken port fails start-up. Resolves with `http://host:port/metrics`. */
  async listen(): Promise<string> {
    const server = createServer((req, res) => void this.serve(req, res));
    server.requestTimeout = this.config.http.requestTimeoutMs;
    server.headersTimeout = this.config.http.headersTimeoutMs;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.config.metrics.port, this.config.metrics.host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    this.server = server;
    const { address, port } = server.address() as AddressInfo;
    return `http://${address.includes(':') ? `[${address}]` : address}:${port}${METRICS_PATH}`;
  }

  async onApplicationShutdown(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private async serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '').split('?')[0];
    if (path !== METRICS_PATH || (req.method !== 'GET' && req.method !== 'HEAD')) {
      res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: `not found: only GET ${METRICS_PATH} is served here` }));
      return;
    }
    try {
      const text = await register.metrics();
      res.writeHead(200, { 'content-type': register.contentType }).end(req.method === 'HEAD' ? undefined : text);
    } catch (err) {
      res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ error: `metrics collection failed: ${(err as Error).message}` }));
    }
  }
}
