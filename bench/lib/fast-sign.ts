/**
 * Signing on the fly for the long-running benches: tiny-secp256k1's WASM Schnorr signs an event
 * in well under a millisecond, so publishers need no pre-signed fixtures whose `created_at` would
 * drift out of the relay's ±900 s window during a long run.
 */
import { randomBytes } from 'node:crypto';
import { signSchnorr, xOnlyPointFromScalar } from 'tiny-secp256k1';
import { NostrEvent } from '../../src/common/nostr.types.js';
import { computeEventId } from '../../src/events/event-validation.js';

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
