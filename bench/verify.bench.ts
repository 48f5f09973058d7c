/**
 * Signature verification throughput: synchronous single-thread baseline vs the worker pool,
 * measured in the same run. Build, then `node dist/bench/verify.bench.js [events] [threads]`.
 *
 * Fixtures are signed with tiny-secp256k1 (fast) and the sync pass also checks they verify.
 */
import { randomBytes } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { signSchnorr, xOnlyPointFromScalar } from 'tiny-secp256k1';
import { NostrEvent } from '../src/common/nostr.types.js';
import { computeEventId } from '../src/events/event-validation.js';
import { SignatureVerifier, verifyEventSync } from '../src/events/signature-verifier.js';

const EVENTS = Number(process.argv[2] ?? 20_000);
const THREADS = Number(process.argv[3] ?? availableParallelism());
const KEYS = 16;

function makeEvents(count: number): NostrEvent[] {
  const keys = Array.from({ length: KEYS }, () => randomBytes(32));
  const now = Math.floor(Date.now() / 1000);
  return Array.from({ length: count }, (_, i) => {
    const sk = keys[i % KEYS];
    const pubkey = Buffer.from(xOnlyPointFromScalar(sk)).toString('hex');
    const unsigned = { pubkey, created_at: now, kind: 9, tags: [['h', 'bench-room']], content: `bench message ${i} `.repeat(8) };
    const id = computeEventId(unsigned);
    const sig = Buffer.from(signSchnorr(Buffer.from(id, 'hex'), sk, randomBytes(32))).toString('hex');
    return { ...unsigned, id, sig };
  });
}

function syncRate(events: NostrEvent[]): number {
  const start = process.hrtime.bigint();
  for (const ev of events) {
    if (!verifyEventSync(ev).ok) throw new Error('fixture failed to verify');
  }
  return rate(events.length, start);
}

async function poolRate(verifier: SignatureVerifier, events: NostrEvent[]): Promise<number> {
  const start = process.hrtime.bigint();
  const window = 8000; // stay under the pool's 10,000 pending bound
  for (let i = 0; i < events.length; i += window) {
    const results = await Promise.all(events.slice(i, i + window).map((ev) => verifier.verify(ev)));
    if (results.some((r) => !r.ok)) throw new Error('fixture failed to verify in the pool');
  }
  return rate(events.length, start);
}

function rate(count: number, start: bigint): number {
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  return count / seconds;
}

async function main(): Promise<void> {
  const events = makeEvents(EVENTS);
  const verifier = new SignatureVerifier({ poolSize: THREADS });
  try {
    syncRate(events.slice(0, 500)); // warm-up: JIT and WASM
    await poolRate(verifier, events.slice(0, 2000));
    const sync = syncRate(events);
    const pool = await poolRate(verifier, events);
    const stats = verifier.stats();
    console.log(`events=${EVENTS} cpus=${availableParallelism()} pool_threads=${THREADS}`);
    console.log(`sync single-thread: ${sync.toFixed(0)} verifications/s (baseline)`);
    console.log(`worker pool:        ${pool.toFixed(0)} verifications/s`);
    console.log(`ratio pool/sync:    ${(pool / sync).toFixed(2)}x`);
    console.log(`batches=${stats.batchesSent} largest_batch=${stats.largestBatch} restarts=${stats.workerRestarts}`);
  } finally {
    await verifier.close();
  }
}

void main();
