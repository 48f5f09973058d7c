import { Injectable } from '@nestjs/common';
import type { ProbeError, ProbeSample } from '../../packages/read-path/src/replica-fence/fence-probe.js';
import { ReplicaFenceService } from '../../packages/read-path/src/replica-fence/replica-fence.service.js';

/**
 * The fence service with a beat on demand, for tests that need one beat's outcome (a lock wait,
 * a span, an epoch rotation) rather than the loop's next. Put in place of ReplicaFenceService with
 * `overrideProvider(ReplicaFenceService).useClass(SteppedReplicaFence)`; stop the loop
 * (`stopProbe()`) before stepping, so no loop beat interleaves.
 */
@Injectable()
export class SteppedReplicaFence extends ReplicaFenceService {
  /** One beat now, exactly as the loop runs it. */
  step(): Promise<ProbeSample | ProbeError> {
    return this.beat();
  }
}
