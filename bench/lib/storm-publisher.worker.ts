/**
 * The storm bench's publisher, on a worker thread of its own (bench/storm.bench.ts). On the
 * bench's main thread it shared an event loop with the thousand storm clients, whose history
 * frames kept that loop busy: a publisher `OK` sat unread in the socket while the clients'
 * frames were parsed, and the bench measured its own loop rather than the relay. Here the OK is
 * read as soon as the thread is scheduled. Times are absolute (`timeOrigin + now`) so the main
 * thread can place them on its own clock.
 */
import { performance } from 'node:perf_hooks';
import { parentPort, workerData } from 'node:worker_threads';
import { BenchConnection, toPublishItems } from './bench-connection.js';
import { fastSigner } from './fast-sign.js';

export interface PublisherWorkerData {
  readonly relayUrl: string;
  readonly everyMs: number;
  readonly okWaitMs: number;
  /** Answer the relay's NIP-42 challenge first (false for nostream, which sends none). */
  readonly auth: boolean;
}

export interface PublishRecordAbs {
  sentAtAbsMs: number;
  ms: number;
  /** '' when accepted, the OK message when refused, `unanswered` or the socket error otherwise. */
  outcome: string;
}

const { relayUrl, everyMs, okWaitMs, auth } = workerData as PublisherWorkerData;
const port = parentPort!;
const signer = fastSigner();
const conn = auth ? await BenchConnection.open(relayUrl, signer.sk) : await BenchConnection.openUnauthenticated(relayUrl);
const records: PublishRecordAbs[] = [];
const inflight = new Set<Promise<void>>();
let n = 0;
const timer = setInterval(() => {
  const rec: PublishRecordAbs = { sentAtAbsMs: performance.timeOrigin + performance.now(), ms: Number.NaN, outcome: 'unanswered' };
  records.push(rec);
  const event = signer.sign(1, [['t', 'storm-publisher']], `publisher event ${n++}`);
  const p = conn.publishWindowed(toPublishItems([event]), 1).then(
    (r) => {
      rec.ms = r.latenciesMs[0];
      rec.outcome = r.rejected === 0 ? '' : ([...r.reasons.keys()][0] ?? 'refused');
    },
    (err: Error) => void (rec.outcome = `socket: ${err.message}`),
  );
  inflight.add(p);
  void p.finally(() => inflight.delete(p));
}, everyMs);
port.postMessage({ type: 'started' });
port.on('message', async (msg: { type: string }) => {
  if (msg.type !== 'stop') return;
  clearInterval(timer);
  await Promise.race([Promise.all(inflight), new Promise((r) => setTimeout(r, okWaitMs))]);
  conn.close();
  port.postMessage({ type: 'records', records });
});
