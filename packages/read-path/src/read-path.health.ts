/**
 * The read path's `@nestjs/terminus` health indicator. It lives apart from the main entry, behind
 * its own (`@buzz-relay/read-path/terminus`), so an app without terminus never loads it: terminus
 * is an optional peer dependency.
 */
import { Injectable } from '@nestjs/common';
import { HealthIndicatorService } from '@nestjs/terminus';
import { ReplicaFenceService } from './replica-fence/replica-fence.service.js';
import { RoutedReader } from './routing/routed-reader.service.js';

/**
 * Whether bounded reads are proved on the replica now (RoutedReader.replicaServing()), with the
 * proof's age. Up: `{ status: 'up', fence, proofAgeMs, heartbeatAgeMs }`. Down adds `reason`, in
 * the options' own words (`the replica's proof is 2412 ms old, over readMaxAgeMs 2000`, `no proof
 * yet (fence running)`, …). Down does not mean reads fail: they are served by the writer.
 * Provide it in a module that imports TerminusModule (whose HealthIndicatorService it injects).
 */
@Injectable()
export class ReadPathHealthIndicator {
  constructor(
    private readonly health: HealthIndicatorService,
    private readonly routed: RoutedReader,
    private readonly fence: ReplicaFenceService,
  ) {}

  async isHealthy<const Key extends string = 'replica'>(key: Key = 'replica' as Key) {
    const indicator = this.health.check(key);
    const now = await this.routed.replicaServing();
    const heartbeatAgeMs = this.fence.ring.heartbeatAgeMs();
    const data = {
      fence: this.fence.getState(),
      // The age of the proof the replica has replayed, and of the newest proof this process made.
      ...(now.proofAgeMs === undefined ? {} : { proofAgeMs: Math.round(now.proofAgeMs) }),
      ...(heartbeatAgeMs === undefined ? {} : { heartbeatAgeMs: Math.round(heartbeatAgeMs) }),
    };
    return now.serving ? indicator.up(data) : indicator.down({ ...data, reason: now.reason ?? 'not serving' });
  }
}
