/**
 * Read-your-writes for bounded reads (docs/read-routing.md). A bounded proof lets a page miss
 * the newest B of commits, which includes the reader's own just-acknowledged write. This
 * process remembers, per (community, author), the monotonic time W at which its last write
 * was acknowledged (after COMMIT returned). A proof entry whose `committedAt` (taken before
 * the heartbeat UPDATE was sent) is later than W was committed after that write, so a replica
 * session proving it has replayed the write. Bounded reads for that author accept only such
 * entries; covered reads need nothing (a new write's created_at is above every fence wall).
 *
 * Entries expire after the staleness gate: any entry a bounded read can accept is younger than
 * B ≤ 30 s, so an older write is always covered by it.
 */
import { performance } from 'node:perf_hooks';
import { FENCE_STALENESS_MS } from '../replica-fence/replica-fence.constants.js';

export interface Author {
  readonly communityId: string;
  readonly pubkey: string;
}

const PRUNE_EVERY = 1024;

export class RecentWrites {
  private readonly last = new Map<string, number>();
  private notes = 0;

  constructor(private readonly now: () => number = () => performance.now()) {}

  /** Call after the write's COMMIT returned and before it is acknowledged to the client. */
  noteWrite(author: Author): void {
    const key = keyOf(author);
    this.last.delete(key); // re-insert so Map order stays oldest-first for pruning
    this.last.set(key, this.now());
    if (++this.notes % PRUNE_EVERY === 0) this.prune();
  }

  /** Monotonic ms of the author's last acknowledged write within the staleness window. */
  lastWriteAt(author: Author): number | undefined {
    const at = this.last.get(keyOf(author));
    return at !== undefined && this.now() - at <= FENCE_STALENESS_MS ? at : undefined;
  }

  size(): number {
    return this.last.size;
  }

  private prune(): void {
    const cutoff = this.now() - FENCE_STALENESS_MS;
    for (const [key, at] of this.last) {
      if (at > cutoff) break;
      this.last.delete(key);
    }
  }
}

function keyOf(a: Author): string {
  return `${a.communityId}:${a.pubkey}`;
}
