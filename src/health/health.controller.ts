import { Controller, Get, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { DatabaseService } from '../database/database.service.js';
import { RelayMetrics } from '../metrics/relay-metrics.service.js';

/**
 * Liveness says the process serves HTTP. Readiness needs the writer (acquire
 * plus SELECT 1 within 2 s); the reader's state is reported, never required,
 * because every read can be served by the writer.
 */
@Controller()
export class HealthController {
  private shuttingDown = false;

  constructor(
    private readonly db: DatabaseService,
    private readonly metrics: RelayMetrics,
  ) {}

  markShuttingDown(): void {
    this.shuttingDown = true;
  }

  @Get(['healthz', 'health', '_liveness'])
  live(@Res() reply: FastifyReply): void {
    void reply.status(200).header('content-type', 'text/plain').send('ok');
  }

  @Get(['readyz', '_readiness'])
  async ready(@Res() reply: FastifyReply): Promise<void> {
    const [writer, reader] = await Promise.all([this.db.writerReachable(), this.db.pingReader()]);
    const ready = writer && !this.shuttingDown;
    this.metrics.readinessState.set(ready ? 1 : 0);
    const body = { status: this.shuttingDown ? 'shutting_down' : ready ? 'ready' : 'not_ready', writer: writer ? 'reachable' : 'unreachable', reader };
    void reply.status(ready ? 200 : 503).header('content-type', 'application/json').send(JSON.stringify(body));
  }
}
