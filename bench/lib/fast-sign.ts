/**
 * Signing on the fly for the long-running benches: tiny-secp256k1's WASM Schnorr signs an event
 * in well under a millisecond, so publishers need no pre-signed fixtures whose `created_at` would
 * drift out of the relay's ±900 s window during a long run.
 */
import { createHash, randomBytes } from 'node:crypto';
import { pointFromScalar, signSchnorr, xOnlyPointFromScalar } from 'tiny-secp256k1';
import { NostrEvent } from '../../src/nostr/nostr.types.js';
import { computeEventId } from '../../src/nostr/event-id.js';

export interface FastSigner {
  readonly sk: Uint8Array;
  readonly pubkey: string;
  /** Signs kind/tags/content with `created_at` = now. */
  sign(kind: number, tags: string[][], content: string): NostrEvent;
}

export function fastSigner(sk: Uint8Array = randomBytes(32)): FastSigner {
  const pubkey = Buffer.from(xOnlyPointFromScalar(sk)).toString('hex');
  return {
    sk,
    pubkey,
    sign(kind, tags, content) {
      const unsigned = { pubkey, created_at: Math.floor(Date.now() / 1000), kind, tags, content };
      const id = computeEventId(unsigned);
      return { ...unsigned, id, sig: Buffer.from(signSchnorr(Buffer.from(id, 'hex'), sk, randomBytes(32))).toString('hex') };
    },
  };
}

/** The order of secp256k1's group. */
const N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
const CHALLENGE_TAG = createHash('sha256').update('BIP0340/challenge').digest();

const toBig = (bytes: Uint8Array) => BigInt(`0x${Buffer.from(bytes).toString('hex')}`);
const to32 = (n: bigint) => Buffer.from(n.toString(16).padStart(64, '0'), 'hex');

/** d·G as [x, d or n − d so that the point has an even y] (BIP-340's normalisation). */
function evenY(scalar: Uint8Array): [Buffer, bigint] {
  const point = pointFromScalar(scalar, true)!;
  const d = toBig(scalar);
  return [Buffer.from(point.subarray(1)), point[0] === 0x02 ? d : N - d];
}

/**
 * A signer whose first signature costs no elliptic-curve multiplication: both multiplications a
 * BIP-340 signature needs (the key's public point and the nonce's `R = k·G`) are done here, ahead
 * of time, so what is left at signing time is two SHA-256 and one modular product. For a storm's
 * AUTH, where a thousand clients each sign one challenge the moment it arrives, on the cores the
 * relay needs. The signature is an ordinary BIP-340 signature (any verifier accepts it); the nonce
 * is random, not BIP-340's derived one, and used once: later calls sign the usual way.
 */
export function preparedSigner(sk: Uint8Array = randomBytes(32)): FastSigner {
  const plain = fastSigner(sk);
  const [px, d] = evenY(sk);
  let nonce: [Buffer, bigint] | undefined = evenY(validScalar());
  return {
    sk,
    pubkey: plain.pubkey,
    sign(kind, tags, content) {
      if (nonce === undefined) return plain.sign(kind, tags, content);
      const [rx, k] = nonce;
      nonce = undefined;
      const unsigned = { pubkey: plain.pubkey, created_at: Math.floor(Date.now() / 1000), kind, tags, content };
      const id = computeEventId(unsigned);
      const e = toBig(createHash('sha256').update(CHALLENGE_TAG).update(CHALLENGE_TAG).update(rx).update(px).update(Buffer.from(id, 'hex')).digest()) % N;
      const s = (k + e * d) % N;
      return { ...unsigned, id, sig: Buffer.concat([rx, to32(s)]).toString('hex') };
    },
  };
}

function validScalar(): Buffer {
  for (;;) {
    const k = randomBytes(32);
    const n = toBig(k);
    if (n > 0n && n < N) return k;
  }
}
