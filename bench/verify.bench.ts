/**
 * Signature verification throughput, all in one run: the WASM backend (tiny-secp256k1) on one
 * thread is the baseline; the native backend (libsecp256k1 addon) on one thread, and the worker
 * pool with each backend, are printed as ratios to it.
 * Build, then `node dist/bench/verify.bench.js [events] [threads]`.
 *
 * Fixtures are signed with tiny-secp256k1 (fast) and the sync pass also checks they verify.
 */
import { randomBytes } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { signSchnorr, xOnlyPointFromScalar } from 'tiny-secp256k1';
import { NostrEvent } from '../src/nostr/nostr.types.js';
import { computeEventId } from '../src/nostr/event-id.js';
import { SignatureVerifier, verifyEventSync } from '../src/events/signature-verifier.js';
import { SchnorrBackend, selectSchnorrBackend } from '../src/events/signature.worker.js';

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
  const backends: SchnorrBackend[] = ['wasm', 'native'];
  const rows: Array<[string, number]> = [];
  for (const backend of backends) {
    if (selectSchnorrBackend(backend, import.meta.url) !== backend) throw new Error(`${backend} backend did not load`);
    syncRate(events.slice(0, 500)); // warm-up: JIT and WASM
    rows.push([`${backend}, 1 thread`, syncRate(events)]);
  }
  selectSchnorrBackend('auto', import.meta.url);
  for (const backend of backends) {
    const verifier = new SignatureVerifier({ poolSize: THREADS, backend });
    try {
      await poolRate(verifier, events.slice(0, 2000));
      rows.push([`${backend}, pool of ${THREADS}`, await poolRate(verifier, events)]);
      const stats = verifier.stats();
      console.error(`${backend} pool: batches=${stats.batchesSent} largest_batch=${stats.largestBatch} restarts=${stats.workerRestarts}`);
    } finally {
      await verifier.close();
    }
  }
  const baseline = rows[0][1];
  console.log(`events=${EVENTS} cpus=${availableParallelism()} pool_threads=${THREADS}`);
  for (const [label, perSecond] of rows) {
    console.log(`${label.padEnd(20)} ${perSecond.toFixed(0).padStart(7)} verifications/s  ratio ${(perSecond / baseline).toFixed(2)}x`);
  }
}

void main();
