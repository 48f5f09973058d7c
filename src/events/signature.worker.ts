/**
 * Event id + BIP-340 Schnorr verification core, and the `worker_threads` entry that runs it for
 * {@link SignatureVerifier} (`signature-verifier.ts`).
 *
 * This file must stay self-contained: its only run-time imports are `node:` built-ins and
 * `tiny-secp256k1` (the wire type is imported as a type, erased when compiled), and it never touches `import.meta` (the native backend is loaded through a
 * `createRequire` anchor the caller passes in). That is what lets the pool run it as compiled
 * ESM (`dist/src/events/signature.worker.js`) and the unit specs run it from source, as a CommonJS
 * string evaluated in the worker (test/harness/signature-verifier-from-source.ts). On the main thread importing it
 * has no side effects beyond loading the WASM verifier (used by `verifyEventSync`).
 */
import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { isMainThread, parentPort, workerData } from 'node:worker_threads';
import type { MessagePort } from 'node:worker_threads';
import { isXOnlyPoint, verifySchnorr } from 'tiny-secp256k1';
import type { NostrEvent } from '../nostr/nostr.types.js';

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

/** The fields that enter the id and the signature check: a NIP-01 event. */
export type VerifiableEvent = NostrEvent;

/** `workerData` of a pool worker. */
export interface SignatureWorkerData {
  role: typeof SIGNATURE_WORKER_ROLE;
  /** File URL or path that `require` resolves the native backend from. */
  anchor: string;
  backend: SchnorrBackendPreference;
}

/**
 * Which BIP-340 implementation checks signatures:
 * - `native`: libsecp256k1 through the prebuilt N-API addon of the `secp256k1` package. That addon
 *   has no Schnorr entry point, so the check is built from its point operations (see
 *   {@link verifyNativeSchnorr}); about 2.6 times the events per second of `wasm` here.
 * - `wasm`: tiny-secp256k1's own `verifySchnorr`, the fallback when the addon cannot load.
 */
export type SchnorrBackend = 'native' | 'wasm';
export type SchnorrBackendPreference = SchnorrBackend | 'auto';

/** main → worker */
export interface VerifyBatchRequest {
  batchId: number;
  events: VerifiableEvent[];
}

/** worker → main */
export type WorkerReply = { type: 'ready' } | { type: 'result'; batchId: number; codes: Uint8Array };

/**
 * The NIP-01 id: the same two lines as `computeEventId` in `nostr/event-id.ts` (see there), kept
 * here because this file may import nothing but built-ins and tiny-secp256k1.
 */
function computeEventId(ev: Pick<VerifiableEvent, 'pubkey' | 'created_at' | 'kind' | 'tags' | 'content'>): string {
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
  if (nativeAddon !== null) {
    const code = verifyNativeSchnorr(nativeAddon, msg, pubkey, sig);
    if (code !== null) return code;
  }
  return verifyWasmSchnorr(msg, pubkey, sig);
}

function verifyWasmSchnorr(msg: Buffer, pubkey: Buffer, sig: Buffer): VerifyCode {
  try {
    return verifySchnorr(msg, pubkey, sig) ? VERIFY_CODE.OK : VERIFY_CODE.BAD_SIGNATURE;
  } catch {
    // tiny-secp256k1 throws for a key that is not on the curve or an out-of-range signature.
    return isXOnlyPoint(pubkey) ? VERIFY_CODE.BAD_SIGNATURE : VERIFY_CODE.BAD_PUBKEY;
  }
}

/** The few entry points of the `secp256k1` package's addon used here; each returns 0 on success. */
interface Secp256k1Addon {
  publicKeyTweakMul(output: Buffer, publicKey: Buffer, tweak: Buffer): number;
  publicKeyTweakAdd(output: Buffer, publicKey: Buffer, tweak: Buffer): number;
  privateKeyNegate(scalar: Buffer): number;
}

let nativeAddon: Secp256k1Addon | null = null;

/**
 * Selects the backend for this thread and returns the one in use. `auto` and `native` load the
 * addon when they can (resolved from `anchor`); `native` that cannot load falls back to `wasm`,
 * because refusing every event would be worse than verifying them more slowly.
 */
export function selectSchnorrBackend(preference: SchnorrBackendPreference, anchor: string): SchnorrBackend {
  nativeAddon = preference === 'wasm' ? null : (nativeAddon ?? loadNativeAddon(anchor));
  return nativeAddon === null ? 'wasm' : 'native';
}

function loadNativeAddon(anchor: string): Secp256k1Addon | null {
  try {
    const requireFromAnchor = createRequire(anchor);
    const packageDir = dirname(requireFromAnchor.resolve('secp256k1/package.json'));
    // node-gyp-build is the package's own loader: it picks the prebuilt binary for this platform.
    const load = createRequire(`${packageDir}/`)('node-gyp-build') as (dir: string) => { Secp256k1: new () => Secp256k1Addon };
    const addon = new (load(packageDir).Secp256k1)();
    return typeof addon.publicKeyTweakMul === 'function' ? addon : null;
  } catch {
    return null;
  }
}

/** n, the order of the secp256k1 group, and p, its field size, big-endian. */
const CURVE_ORDER = Buffer.from('fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141', 'hex');
const FIELD_SIZE = Buffer.from('fffffffffffffffffffffffffffffffffffffffffffffffffffffffefffffc2f', 'hex');
const CHALLENGE_TAG = createHash('sha256').update('BIP0340/challenge').digest();

/**
 * BIP-340 verification from libsecp256k1 point operations:
 * e = int(tagged_hash("BIP0340/challenge", r ‖ P ‖ m)) mod n, then R = s·G − e·P must be a
 * finite point with even y and x(R) = r. `P` is lifted as the even-y point `02 ‖ px`;
 * `tweakMul` gives −e·P and `tweakAdd` adds s·G, and the compressed output's prefix byte is the
 * parity of y. Returns null in the one case these operations cannot express (e ≡ 0 mod n, which a
 * hash hits with negligible probability), and the caller then uses the WASM check.
 */
function verifyNativeSchnorr(addon: Secp256k1Addon, msg: Buffer, pubkey: Buffer, sig: Buffer): VerifyCode | null {
  const r = sig.subarray(0, 32);
  const s = sig.subarray(32, 64);
  if (r.compare(FIELD_SIZE) >= 0 || s.compare(CURVE_ORDER) >= 0) {
    return isXOnlyPoint(pubkey) ? VERIFY_CODE.BAD_SIGNATURE : VERIFY_CODE.BAD_PUBKEY;
  }
  const e = createHash('sha256').update(CHALLENGE_TAG).update(CHALLENGE_TAG).update(r).update(pubkey).update(msg).digest();
  if (e.compare(CURVE_ORDER) >= 0) return null; // needs a reduction mod n; as rare as e ≡ 0
  if (addon.privateKeyNegate(e) !== 0) return null; // e = 0
  const lifted = Buffer.allocUnsafe(33);
  lifted[0] = 0x02;
  pubkey.copy(lifted, 1);
  const minusEP = Buffer.allocUnsafe(33);
  if (addon.publicKeyTweakMul(minusEP, lifted, e) !== 0) {
    return VERIFY_CODE.BAD_PUBKEY; // px is not the x-coordinate of a curve point
  }
  const point = Buffer.allocUnsafe(33);
  if (addon.publicKeyTweakAdd(point, minusEP, s) !== 0) {
    return VERIFY_CODE.BAD_SIGNATURE; // R is the point at infinity
  }
  return point[0] === 0x02 && point.subarray(1).equals(r) ? VERIFY_CODE.OK : VERIFY_CODE.BAD_SIGNATURE;
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

function startWorkerLoop(port: MessagePort, data: SignatureWorkerData): void {
  selectSchnorrBackend(data.backend, data.anchor);
  port.on('message', (request: VerifyBatchRequest) => handleBatch(port, request));
  const ready: WorkerReply = { type: 'ready' };
  port.postMessage(ready);
}

function isPoolWorker(data: unknown): boolean {
  return (data as { role?: unknown } | null)?.role === SIGNATURE_WORKER_ROLE;
}

if (!isMainThread && parentPort !== null && isPoolWorker(workerData)) {
  startWorkerLoop(parentPort, workerData as SignatureWorkerData);
}
