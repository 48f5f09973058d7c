import { Controller, Get, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { DatabaseService } from '@buzz-relay/read-path';
import { RelayMetrics } from '../metrics/relay-metrics.service.js';
import { RedisService } from '../redis/redis.service.js';
import { LifecycleState } from './lifecycle-state.js';
import { ReadinessSampler } from './readiness-sampler.service.js';

/**
 * Liveness says the process serves HTTP. Readiness needs a writer that is not unreachable and a
 * process that is not draining. Both answer from state, never from a query: the writer's and the
 * reader's states are ReadinessSampler's last sample, so a probe does not queue behind client work
 * for a pool connection. The reader's and Redis's states are reported, never required: every read
 * can be served by the writer, and a pod without Redis still serves its own clients (relay.md
 * §6.1: a failing shared dependency does not de-route the pod).
 */
@Controller()
export class HealthController {
  constructor(
    private readonly db: DatabaseService,
    private readonly metrics: RelayMetrics,
    private readonly redis: RedisService,
    private readonly lifecycle: LifecycleState,
    private readonly sampler: ReadinessSampler,
  ) {}

  @Get(['healthz', 'health', '_liveness'])
  live(@Res() reply: FastifyReply): void {
    void reply.status(200).header('content-type', 'text/plain').send('ok');
  }

  @Get(['readyz', '_readiness'])
  ready(@Res() reply: FastifyReply): void {
    const draining = this.lifecycle.draining;
    const ready = this.sampler.ready;
    this.metrics.readinessState.set(ready ? 1 : 0);
    const body = {
      status: draining ? 'shutting_down' : ready ? 'ready' : 'not_ready',
      writer: this.sampler.writer,
      reader: this.db.getReaderState(),
      redis: this.redis.state,
    };
    void reply.status(ready ? 200 : 503).header('content-type', 'application/json').send(JSON.stringify(body));
  }
}
