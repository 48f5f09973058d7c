/**
 * Worker side of signInParallel: signs a chunk of templates with nostr-tools' finalizeEvent
 * (pure-JS Schnorr, about 5 ms per event on this machine class, hence the threads). The
 * events come back through structured clone, so they lose nostr-tools' "verified" marker.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { finalizeEvent, type EventTemplate } from 'nostr-tools/pure';

interface SignChunk {
  /** Secret keys as hex; jobs name theirs by index. */
  keys: string[];
  jobs: Array<{ key: number; template: EventTemplate }>;
}

const { keys, jobs } = workerData as SignChunk;
const secretKeys = keys.map((hex) => Uint8Array.from(Buffer.from(hex, 'hex')));
parentPort!.postMessage(jobs.map((job) => finalizeEvent(job.template, secretKeys[job.key])));
