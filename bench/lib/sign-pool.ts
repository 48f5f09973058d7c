/**
 * Pre-signing many events before a timed run. nostr-tools' finalizeEvent costs about 5 ms per
 * event here, so the work is split over one worker thread per core; the result keeps job order.
 */
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import type { Event as NostrEvent, EventTemplate } from 'nostr-tools/pure';

export interface SignJob {
  /** Index into the `secretKeys` passed to signInParallel. */
  key: number;
  template: EventTemplate;
}

export async function signInParallel(secretKeys: readonly Uint8Array[], jobs: readonly SignJob[], threads = availableParallelism()): Promise<NostrEvent[]> {
  const keys = secretKeys.map((sk) => Buffer.from(sk).toString('hex'));
  const size = Math.ceil(jobs.length / Math.max(1, threads));
  const chunks: SignJob[][] = [];
  for (let i = 0; i < jobs.length; i += size) chunks.push(jobs.slice(i, i + size));
  const signed = await Promise.all(chunks.map((chunk) => signChunk(keys, chunk)));
  return signed.flat();
}

function signChunk(keys: string[], jobs: SignJob[]): Promise<NostrEvent[]> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(new URL('./sign.worker.js', import.meta.url), { workerData: { keys, jobs } });
    worker.once('message', (events: NostrEvent[]) => resolve(events));
    worker.once('error', reject);
    worker.once('exit', (code) => {
      if (code !== 0) reject(new Error(`sign worker exited with ${code}`));
    });
  });
}
