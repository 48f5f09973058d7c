/**
 * The relay's own key. It signs the NIP-29 group state it stores (39000–39003), the overlays
 * the bridge synthesises and never stores (39005 thread summaries, 39006 window bounds) and the
 * synthesised presence events. From BUZZ_RELAY_PRIVATE_KEY when set, otherwise random per
 * process: pods behind one address must share the key, or clients see state signed by several.
 */
import { randomBytes } from 'node:crypto';
import * as ecc from 'tiny-secp256k1';
import { computeEventId } from '../nostr/event-id.js';
import { NostrEvent } from '../nostr/nostr.types.js';

export class RelaySigner {
  private readonly secret: Uint8Array;
  readonly pubkey: string;

  constructor(secretHex?: string) {
    this.secret = secretHex ? Buffer.from(secretHex, 'hex') : randomSecret();
    if (this.secret.length !== 32 || !ecc.isPrivate(this.secret)) throw new Error('BUZZ_RELAY_PRIVATE_KEY must be a valid 32-byte hex secret key');
    this.pubkey = Buffer.from(ecc.xOnlyPointFromScalar(this.secret)).toString('hex');
  }

  sign(template: { kind: number; tags: string[][]; content: string; created_at?: number }): NostrEvent {
    const unsigned = {
      pubkey: this.pubkey,
      created_at: template.created_at ?? Math.floor(Date.now() / 1000),
      kind: template.kind,
      tags: template.tags,
      content: template.content,
    };
    const id = computeEventId(unsigned);
    const sig = Buffer.from(ecc.signSchnorr(Buffer.from(id, 'hex'), this.secret, randomBytes(32))).toString('hex');
    return { ...unsigned, id, sig };
  }
}

function randomSecret(): Uint8Array {
  for (;;) {
    const candidate = randomBytes(32);
    if (ecc.isPrivate(candidate)) return candidate;
  }
}
