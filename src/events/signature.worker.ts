/**
 * Event id + BIP-340 Schnorr verification core, and the `worker_threads` entry that runs it for
 * {@link SignatureVerifier} (`signature-verifier.ts`).
 *
 * This file must stay self-contained: its only imports are `node:crypto`, `node:worker_threads`
 * and `tiny-secp256k1`, and it never touches `import.meta`. That is what lets the pool run it
 * both as compiled ESM (`dist/src/events/signature.worker.js`) and, under ts-jest, as source
 * transpiled to a CommonJS string and evaluated in the worker. On the main thread importing it
 * has no side effects beyond loading the WASM verifier (used by `verifyEventSync`).
 */
import { createHash } from 'node:crypto';
import { isMainThread, parentPort, workerData } from 'node:worker_threads';
import type { MessagePort } from 'node:worker_threads';
import { isXOnlyPoint, verifySchnorr } from 'tiny-secp256k1';

/** Per-event outcome codes; compact so a batch answer is one transferable Uint8Array. */
export const VERIFY_CODE = {
  OK: 0,
  ID_MISMATCH: 1,
  BAD_SIGNATURE: 2,
  BAD_PUBKEY: 3,
  MALFORMED: 4,
} as const;
export type VerifyCode = (typeof VERIFY_CODE)[keyof typeof VERIFY_CODE];

/** `workerData.role` marker: the message loop starts only inside a pool worker. */
export const SIGNATURE_WORKER_ROLE = 'buzz-signature-verifier';

/** The fields that enter the id and the signature check. */
export interface VerifiableEvent {
  id: string;
  pubkey: string;
  created_at: number;
  kind: number;
  tags: string[][];
  content: string;
  sig: string;
}

/** main → worker */
export interface VerifyBatchRequest {
  batchId: number;
  events: VerifiableEvent[];
}

/** worker → main */
export type WorkerReply = { type: 'ready' } | { type: 'result'; batchId: number; codes: Uint8Array };

/**
 * Lowercase hex SHA-256 of the NIP-01 serialisation `[0,pubkey,created_at,kind,tags,content]`.
 *
 * `JSON.stringify` is the NIP-01 serialiser in practice: no whitespace, the short escapes for
 * `"` `\` `\n` `\r` `\t` `\b` `\f`, `\u00XX` for the other C0 controls, every other character
 * (U+2028/2029, non-BMP) verbatim and lone surrogates as `\uXXXX`. That is byte-for-byte what
 * nostr-tools' `getEventHash` hashes; `event-validation.spec.ts` checks it on control and unicode
 * content.
 */
export function computeEventId(
  ev: Pick<VerifiableEvent, 'pubkey' | 'created_at' | 'kind' | 'tags' | 'content'>,
): string {
  const canonical = JSON.stringify([0, ev.pubkey, ev.created_at, ev.kind, ev.tags, ev.content]);
  return createHash('sha256').update(canonical, 'utf8').digest('hex');
}

/** Recompute the id, then check the Schnorr signature over it. Never throws. */
export function verifyEventCore(ev: VerifiableEvent): VerifyCode {
  try {
    if (computeEventId(ev) !== ev.id) {
      return VERIFY_CODE.ID_MISMATCH;
    }
    return verifySignature(ev.id, ev.pubkey, ev.sig);
  } catch {
    return VERIFY_CODE.MALFORMED;
  }
}

function verifySignature(idHex: string, pubkeyHex: string, sigHex: string): VerifyCode {
  const msg = strictHex(idHex, 32);
  const pubkey = strictHex(pubkeyHex, 32);
  const sig = strictHex(sigHex, 64);
  if (msg === null || pubkey === null || sig === null) {
    return VERIFY_CODE.MALFORMED;
  }
  try {
    return verifySchnorr(msg, pubkey, sig) ? VERIFY_CODE.OK : VERIFY_CODE.BAD_SIGNATURE;
  } catch {
    // tiny-secp256k1 throws for a key that is not on the curve or an out-of-range signature.
    return isXOnlyPoint(pubkey) ? VERIFY_CODE.BAD_SIGNATURE : VERIFY_CODE.BAD_PUBKEY;
  }
}

function strictHex(hex: unknown, bytes: number): Buffer | null {
  if (typeof hex !== 'string' || hex.length !== bytes * 2 || !/^[0-9a-f]*$/.test(hex)) {
    return null;
  }
  return Buffer.from(hex, 'hex');
}

/** Verify one batch; the reply's buffer is transferred, not copied. */
export function handleBatch(port: MessagePort, request: VerifyBatchRequest): void {
  const codes = new Uint8Array(request.events.length);
  for (let i = 0; i < request.events.length; i++) {
    codes[i] = verifyEventCore(request.events[i]);
  }
  const reply: WorkerReply = { type: 'result', batchId: request.batchId, codes };
  port.postMessage(reply, [codes.buffer]);
}

function startWorkerLoop(port: MessagePort): void {
  port.on('message', (request: VerifyBatchRequest) => handleBatch(port, request));
  const ready: WorkerReply = { type: 'ready' };
  port.postMessage(ready);
}

function isPoolWorker(data: unknown): boolean {
  return (data as { role?: unknown } | null)?.role === SIGNATURE_WORKER_ROLE;
}

if (!isMainThread && parentPort !== null && isPoolWorker(workerData)) {
  startWorkerLoop(parentPort);
}
