import { performance } from 'node:perf_hooks';
import { Client } from 'pg';
import type { ReplicaFenceService } from '../../packages/read-path/src/replica-fence/replica-fence.service.js';

/**
 * A proof the replica has already shown: the heartbeat token and epoch on the replica when it was
 * captured. `open` records it into a fence's ring with the wall and age a test chooses (also a
 * counterfactual one), so a stopped fence opens where the test wants it. Reader sessions prove it
 * as they prove a beat's entry: by observing a token at or above it in the same epoch.
 */
export class FenceProof {
  private constructor(
    private readonly fence: ReplicaFenceService,
    readonly token: bigint,
    readonly epoch: string,
  ) {}

  /** Reads the replica's heartbeat row; capture before a fault makes the replica unreadable. */
  static async capture(fence: ReplicaFenceService, readerUrl: string): Promise<FenceProof> {
    const client = new Client({ connectionString: readerUrl, connectionTimeoutMillis: 5000 });
    await client.connect();
    try {
      const { rows } = await client.query<{ token: string; epoch: string }>('select token::text as token, epoch::text as epoch from replica_heartbeat where id = 1');
      if (rows.length === 0) throw new Error('replica_heartbeat row missing on the replica');
      return new FenceProof(fence, BigInt(rows[0].token), rows[0].epoch);
    } finally {
      await client.end();
    }
  }

  /** Replaces the ring's entries with this proof at `fenceWall`, taken at `committedAt` (monotonic ms). */
  open(fenceWall: number, committedAt: number = performance.now()): void {
    this.fence.ring.close();
    this.fence.ring.record(this.token, this.epoch, committedAt, fenceWall);
  }
}
