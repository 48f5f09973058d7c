import { randomBytes } from 'node:crypto';
import { MessageChannel } from 'node:worker_threads';
import type { Worker } from 'node:worker_threads';
import { finalizeEvent, generateSecretKey } from 'nostr-tools/pure';
import { signSchnorr, xOnlyPointFromScalar } from 'tiny-secp256k1';
import { NostrEvent } from '../nostr/nostr.types.js';
import { computeEventId } from '../nostr/event-id.js';
import { INGEST_REFUSALS } from './ingest.refusals.js';
import {
  SignatureVerifier,
  SignatureVerifierOptions,
  VerifyResult,
  isSignatureVerifierError,
  verifyEventSync,
} from './signature-verifier.js';
import { VERIFY_CODE, WorkerReply, handleBatch } from './signature.worker.js';
import { signatureVerifierFromSource } from '../../test/harness/signature-verifier-from-source.js';

const NOW = 1_700_000_000;

/** Fast signer for bulk fixtures (nostr-tools' pure-JS signer takes ~5 ms an event here). */
function signFast(sk: Uint8Array, content: string, kind = 9): NostrEvent {
  const pubkey = Buffer.from(xOnlyPointFromScalar(sk)).toString('hex');
  const unsigned = { pubkey, created_at: NOW, kind, tags: [['h', 'room']], content };
  const id = computeEventId(unsigned);
  const sig = Buffer.from(signSchnorr(Buffer.from(id, 'hex'), sk, randomBytes(32))).toString('hex');
  return { ...unsigned, id, sig };
}

/** Polls until the condition holds (10 s cap) — waits on behaviour, asserts no timing. */
async function waitFor(condition: () => boolean | Promise<boolean>): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (await condition()) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error('condition not reached');
}

let bulk: NostrEvent[] | undefined;
/** 2,000 valid events, signed once per file. */
function bulkEvents(): readonly NostrEvent[] {
  if (bulk === undefined) {
    const sk = randomBytes(32);
    bulk = Array.from({ length: 2000 }, (_, i) => signFast(sk, `message ${i}`));
  }
  return bulk;
}

function withId(ev: NostrEvent): NostrEvent {
  return { ...ev, id: computeEventId(ev) };
}

function flipHex(hex: string, at = 0): string {
  const c = hex[at] === '0' ? '1' : '0';
  return hex.slice(0, at) + c + hex.slice(at + 1);
}

const otherPubkey = Buffer.from(xOnlyPointFromScalar(randomBytes(32))).toString('hex');
/** x = 5 is not the x-coordinate of any secp256k1 point. */
const offCurvePubkey = '5'.padStart(64, '0');

const nostrToolsKey = generateSecretKey();
const signedByNostrTools: NostrEvent[] = [
  finalizeEvent({ kind: 9, created_at: NOW, tags: [['h', 'room']], content: 'hello' }, nostrToolsKey),
  finalizeEvent({ kind: 0, created_at: NOW, tags: [], content: '{"name":"ü 😀"}' }, nostrToolsKey),
  finalizeEvent({ kind: 30023, created_at: NOW, tags: [['d', 'post']], content: 'a\nb\t"c"\\\u0001' }, nostrToolsKey),
];
const base = signedByNostrTools[0];

const tamperCases: Array<[string, NostrEvent, VerifyResult]> = [
  ['a valid nostr-tools event', base, { ok: true }],
  ['a tampered id', { ...base, id: flipHex(base.id) }, { ok: false, reason: INGEST_REFUSALS.idMismatch }],
  ['tampered content', { ...base, content: 'hellO' }, { ok: false, reason: INGEST_REFUSALS.idMismatch }],
  ['a tampered tag', { ...base, tags: [['h', 'other']] }, { ok: false, reason: INGEST_REFUSALS.idMismatch }],
  ['a tampered sig', { ...base, sig: flipHex(base.sig, 70) }, { ok: false, reason: INGEST_REFUSALS.badSignature }],
  ['re-hashed tampered content', withId({ ...base, content: 'forged' }), { ok: false, reason: INGEST_REFUSALS.badSignature }],
  ['a swapped pubkey', withId({ ...base, pubkey: otherPubkey }), { ok: false, reason: INGEST_REFUSALS.badSignature }],
  ['an off-curve pubkey', withId({ ...base, pubkey: offCurvePubkey }), { ok: false, reason: INGEST_REFUSALS.badPubkey }],
];

describe('verifyEventSync', () => {
  it.each(signedByNostrTools.map((e) => [e.kind, e] as const))('accepts a nostr-tools kind %i event', (_k, e) => {
    expect(verifyEventSync(e)).toEqual({ ok: true });
  });

  it.each(tamperCases)('judges %s', (_label, event, expected) => {
    expect(verifyEventSync(event)).toEqual(expected);
  });

  it('reports a malformed event instead of throwing', () => {
    expect(verifyEventSync({ ...base, content: 10n } as unknown as NostrEvent)).toEqual({ ok: false, reason: INGEST_REFUSALS.malformed });
    expect(INGEST_REFUSALS.malformed.wire).toBe('invalid: malformed event');
  });
});

describe('worker batch handler', () => {
  it('answers a batch with one code per event, in order', async () => {
    const { port1, port2 } = new MessageChannel();
    const reply = new Promise<WorkerReply>((resolve) => port2.once('message', resolve));
    const events = tamperCases.map(([, e]) => e);
    handleBatch(port1, { batchId: 7, events });
    const answer = await reply;
    port1.close();
    expect(answer).toEqual({
      type: 'result',
      batchId: 7,
      codes: Uint8Array.from([
        VERIFY_CODE.OK,
        VERIFY_CODE.ID_MISMATCH,
        VERIFY_CODE.ID_MISMATCH,
        VERIFY_CODE.ID_MISMATCH,
        VERIFY_CODE.BAD_SIGNATURE,
        VERIFY_CODE.BAD_SIGNATURE,
        VERIFY_CODE.BAD_SIGNATURE,
        VERIFY_CODE.BAD_PUBKEY,
      ]),
    });
  });
});

describe('SignatureVerifier', () => {
  const pools: SignatureVerifier[] = [];
  const pool = (options: SignatureVerifierOptions = {}, onWorkerStart?: (worker: Worker) => void) => {
    const p = signatureVerifierFromSource(options, onWorkerStart);
    pools.push(p);
    return p;
  };
  afterEach(async () => {
    await Promise.all(pools.splice(0).map((p) => p.close()));
  });

  it('gives the same verdicts as the synchronous path', async () => {
    const verifier = pool({ poolSize: 2 });
    const results = await Promise.all(tamperCases.map(([, e]) => verifier.verify(e)));
    expect(results).toEqual(tamperCases.map(([, , expected]) => expected));
  });

  it('batches 2,000 concurrent verifies and answers each one correctly', async () => {
    const verifier = pool({ poolSize: 2 });
    const events = [...bulkEvents()];
    const tampered = new Set(events.map((_, i) => i).filter((i) => i % 7 === 3));
    for (const i of tampered) events[i] = { ...events[i], content: `${events[i].content}!` };

    const results = await Promise.all(events.map((e) => verifier.verify(e)));

    results.forEach((r, i) => expect({ i, r }).toEqual({ i, r: tampered.has(i) ? { ok: false, reason: INGEST_REFUSALS.idMismatch } : { ok: true } }));
    const stats = verifier.stats();
    expect(stats.eventsSent).toBe(2000);
    expect(stats.largestBatch).toBe(64);
    expect(stats.batchesSent).toBeLessThanOrEqual(Math.ceil(2000 / 64) + 4);
    expect(stats).toMatchObject({ queued: 0, inflight: 0, workerRestarts: 0 });
  });

  it('sends a write-lane request ahead of every AUTH queued before it (issue 17: EVENT does not wait behind a storm of AUTH)', async () => {
    const verifier = pool({ poolSize: 1, maxBatchSize: 8, maxInflightBatches: 1 });
    const events = bulkEvents().slice(0, 400);
    const order: string[] = [];
    const auths = events.slice(0, 399).map((e, i) => verifier.verify(e, 'auth').then(() => void order.push(`auth${i}`)));
    const write = verifier.verify(events[399]).then((r) => {
      order.push('write');
      return r;
    });
    expect(await write).toEqual({ ok: true });
    await Promise.all(auths);
    // At most the one batch already in the worker (8 AUTH) went out before it.
    expect(order.indexOf('write')).toBeLessThanOrEqual(8);
    expect(order).toHaveLength(400);
    expect(verifier.stats()).toMatchObject({ queued: 0, inflight: 0 });
  });

  it('keeps the main event loop turning while verifying', async () => {
    const verifier = pool({ poolSize: 2 });
    const events = bulkEvents();
    const timeline: Array<'tick' | 'result'> = [];
    let running = true;
    const tick = (): void => {
      timeline.push('tick');
      if (running) setImmediate(tick);
    };
    setImmediate(tick);

    await Promise.all(events.map((e) => verifier.verify(e).then(() => void timeline.push('result'))));
    running = false;

    // Ticks ran between the first and the last result: verification never monopolised the loop.
    const first = timeline.indexOf('result');
    const last = timeline.lastIndexOf('result');
    expect(timeline.slice(first, last).includes('tick')).toBe(true);
  });

  it('rejects past the pending bound with an overloaded error and recovers', async () => {
    const verifier = pool({ poolSize: 1, maxPending: 100 });
    const accepted = Array.from({ length: 100 }, () => verifier.verify(base));
    const refused = await verifier.verify(base).catch((e: unknown) => e);
    expect(isSignatureVerifierError(refused) && refused.code).toBe('overloaded');
    expect(await Promise.all(accepted)).toEqual(Array(100).fill({ ok: true }));
    expect(await verifier.verify(base)).toEqual({ ok: true });
  });

  it('fails in-flight requests of a terminated worker, replaces it and keeps serving', async () => {
    const workers: Worker[] = [];
    const verifier = pool({ poolSize: 1 }, (w) => workers.push(w));
    expect(await verifier.verify(base)).toEqual({ ok: true }); // worker is up and running

    const pending = Array.from({ length: 400 }, () => verifier.verify(base));
    await Promise.resolve(); // let the dispatch microtask post the first batches
    void workers[0].terminate();
    const settled = await Promise.allSettled(pending);

    const rejected = settled.filter((s): s is PromiseRejectedResult => s.status === 'rejected');
    const fulfilled = settled.filter((s): s is PromiseFulfilledResult<VerifyResult> => s.status === 'fulfilled');
    expect(rejected.length).toBeGreaterThan(0);
    expect(rejected.every((s) => isSignatureVerifierError(s.reason) && s.reason.code === 'worker_crashed')).toBe(true);
    expect(fulfilled.every((s) => s.value.ok)).toBe(true);
    expect(fulfilled.length).toBeGreaterThan(0); // the queued remainder ran on the replacement
    expect(workers).toHaveLength(2);
    expect(verifier.stats()).toMatchObject({ workers: 1, workerRestarts: 1, queued: 0, inflight: 0 });
    expect(await verifier.verify(base)).toEqual({ ok: true });
  });

  it('survives a worker that throws (uncaught exception in the worker)', async () => {
    const workers: Worker[] = [];
    const verifier = pool({ poolSize: 1 }, (w) => workers.push(w));
    expect(await verifier.verify(base)).toEqual({ ok: true });
    const exited = new Promise((resolve) => workers[0].once('exit', resolve));

    workers[0].postMessage({ batchId: -1, events: null }); // handleBatch throws on this

    await exited;
    expect(await verifier.verify(base)).toEqual({ ok: true });
    expect(verifier.stats().workerRestarts).toBe(1);
  });

  it('fails fast while workers cannot start, then recovers', async () => {
    let started = 0;
    let exited = 0;
    const verifier = pool({ poolSize: 1 }, (w) => {
      w.once('exit', () => (exited += 1));
      if (started++ < 3) void w.terminate(); // dies before it ever reports ready
    });
    const first = await verifier.verify(base).catch((e: unknown) => e);
    expect(isSignatureVerifierError(first) && first.code).toBe('worker_crashed');

    await waitFor(() => exited >= 3);
    const refused = await verifier.verify(base).catch((e: unknown) => e);
    expect(isSignatureVerifierError(refused) && refused.message).toBe('signature workers failed to start');

    await waitFor(async () => (await verifier.verify(base).catch(() => ({ ok: false }))).ok);
    expect(verifier.stats().workerRestarts).toBe(3);
  });

  it('close() rejects queued and later requests with a closed error', async () => {
    const verifier = pool({ poolSize: 1 });
    const pending = Promise.allSettled(Array.from({ length: 300 }, () => verifier.verify(base)));
    await verifier.close();
    const settled = await pending;
    expect(settled.every((s) => s.status === 'rejected' && isSignatureVerifierError(s.reason) && s.reason.code === 'closed')).toBe(true);
    const late = await verifier.verify(base).catch((e: unknown) => e);
    expect(isSignatureVerifierError(late) && late.code).toBe('closed');
    await verifier.close(); // idempotent
  });

  it('uses at least one worker', () => {
    expect(pool({ poolSize: 0 }).stats().workers).toBe(1);
  });
});
