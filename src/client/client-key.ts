/**
 * A client's signing key: BIP-340 Schnorr over secp256k1 with tiny-secp256k1 and the relay's
 * own canonical id function, so the client needs nothing outside the relay's dependencies.
 */
import { randomBytes } from 'node:crypto';
import * as ecc from 'tiny-secp256k1';
import { NostrEvent } from '../nostr/nostr.types.js';
import { computeEventId } from '../nostr/event-id.js';
import { lowerHex64 } from '../nostr/hex.js';

export interface EventTemplate {
  kind: number;
  tags?: string[][];
  content?: string;
  created_at?: number;
}

export class ClientKey {
  readonly pubkey: string;
  private readonly secret: Uint8Array;

  /** `secret` as 32 bytes or 64 hex characters. */
  constructor(secret: Uint8Array | string) {
    if (typeof secret === 'string' && lowerHex64(secret) === undefined) throw new Error('secret key must be 64 hex characters');
    const bytes = typeof secret === 'string' ? Buffer.from(secret, 'hex') : secret;
    if (bytes.length !== 32 || !ecc.isPrivate(bytes)) throw new Error('secret key must be a valid 32-byte secp256k1 scalar (64 hex characters)');
    this.secret = Uint8Array.from(bytes);
    this.pubkey = Buffer.from(ecc.xOnlyPointFromScalar(this.secret)).toString('hex');
  }

  /** A fresh random key, never persisted. */
  static generate(): ClientKey {
    for (;;) {
      const candidate = randomBytes(32);
      if (ecc.isPrivate(candidate)) return new ClientKey(candidate);
    }
  }

  sign(template: EventTemplate): NostrEvent {
    const unsigned = {
      pubkey: this.pubkey,
      created_at: template.created_at ?? Math.floor(Date.now() / 1000),
      kind: template.kind,
      tags: template.tags ?? [],
      content: template.content ?? '',
    };
    const id = computeEventId(unsigned);
    const sig = Buffer.from(ecc.signSchnorr(Buffer.from(id, 'hex'), this.secret, randomBytes(32))).toString('hex');
    return { ...unsigned, id, sig };
  }
}
