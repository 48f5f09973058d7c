/**
 * The in-process proof ring (database.md §2.6): the heartbeat tokens this process's probe
 * committed, each with the fence wall it proves. A reader session that observes token T in
 * epoch E proves the greatest retained entry with token ≤ T.
 *
 * Times are monotonic milliseconds (`performance.now()`); walls are writer-clock epoch
 * milliseconds.
 */
import { performance } from 'node:perf_hooks';
import { FENCE_STALENESS_MS, PROOF_RING_CAPACITY } from './replica-fence.constants.js';

export interface ProofEntry {
  readonly token: bigint;
  /** Monotonic ms captured just before the heartbeat UPDATE round trip (ages over-estimate). */
  readonly committedAt: number;
  /** Writer-clock epoch ms: every channel-bearing row with created_at ≤ wall is present. */
  readonly fenceWall: number;
}

export type RecordOutcome = 'recorded' | 'token_regression';

export type ResolveOutcome =
  | { readonly kind: 'proved'; readonly entry: ProofEntry }
  | { readonly kind: 'epoch_mismatch' }
  | { readonly kind: 'token_behind' };

export class ProofRing {
  private epoch: string | undefined;
  private ring: ProofEntry[] = [];

  constructor(
    private readonly now: () => number = () => performance.now(),
    private readonly capacity = PROOF_RING_CAPACITY,
  ) {}

  record(token: bigint, epoch: string, committedAt: number, fenceWall: number): RecordOutcome {
    const entry: ProofEntry = { token, committedAt, fenceWall };
    if (epoch !== this.epoch) {
      this.epoch = epoch;
      this.ring = [entry];
      return 'recorded';
    }
    const last = this.ring.at(-1);
    if (last !== undefined && token <= last.token) {
      this.ring = [];
      return 'token_regression';
    }
    if (this.ring.length >= this.capacity) this.ring.shift();
    this.ring.push(entry);
    return 'recorded';
  }

  /** The greatest retained entry with token ≤ the observed one, in the same epoch. */
  resolve(token: bigint, epoch: string): ResolveOutcome {
    if (this.epoch !== undefined && this.epoch !== epoch) return { kind: 'epoch_mismatch' };
    for (let i = this.ring.length - 1; i >= 0; i--) {
      if (this.ring[i].token <= token) return { kind: 'proved', entry: this.ring[i] };
    }
    return { kind: 'token_behind' };
  }

  /** The back entry if it is a live proof (age ≤ 30 s), else undefined. */
  newest(): ProofEntry | undefined {
    const last = this.ring.at(-1);
    return last !== undefined && this.ageOf(last) <= FENCE_STALENESS_MS ? last : undefined;
  }

  /** Age of the back entry in ms, not staleness-gated (probe liveness for observability). */
  heartbeatAgeMs(): number | undefined {
    const last = this.ring.at(-1);
    return last === undefined ? undefined : this.ageOf(last);
  }

  ageOf(entry: ProofEntry): number {
    return this.now() - entry.committedAt;
  }

  /** The newest live wall (epoch ms), if the fence is open. */
  verifiedThrough(): number | undefined {
    return this.newest()?.fenceWall;
  }

  covers(epochMs: number): boolean {
    const wall = this.verifiedThrough();
    return wall !== undefined && epochMs <= wall;
  }

  size(): number {
    return this.ring.length;
  }

  currentEpoch(): string | undefined {
    return this.epoch;
  }

  /** Clears the ring; the epoch is kept. */
  close(): void {
    this.ring = [];
  }
}
