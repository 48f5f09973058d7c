import { Module } from '@nestjs/common';
import { ReplicaFenceService } from './replica-fence.service.js';
import { ConfigurableReplicaFenceModule } from './replica-fence.options.js';

/**
 * The replica fence: probe loop, proof ring, floor-guard verification, fence gauges:
 * `ReplicaFenceModule.forRoot({ probe: true })`. It injects DatabaseService and DatabaseMetrics,
 * so DatabaseModule must be registered beside it.
 */
@Module({ providers: [ReplicaFenceService], exports: [ReplicaFenceService] })
export class ReplicaFenceModule extends ConfigurableReplicaFenceModule {}
