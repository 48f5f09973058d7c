/**
 * The storm clients' prepared signer (bench/lib/fast-sign.ts) computes BIP-340 signatures by
 * hand: every one must verify, for keys and nonces of either parity, the first (prepared) and the
 * later (ordinary) signatures alike, or the storm's AUTH would be refused.
 */
import { randomBytes } from 'node:crypto';
import { verifySchnorr } from 'tiny-secp256k1';
import { verifyEvent } from 'nostr-tools/pure';
import { preparedSigner } from '../../bench/lib/fast-sign.js';

describe('preparedSigner', () => {
  it('signs events that verify, for 64 keys (both parities of key and nonce)', () => {
    for (let i = 0; i < 64; i++) {
      const signer = preparedSigner(randomBytes(32));
      const first = signer.sign(22242, [['relay', 'ws://localhost:1'], ['challenge', `c${i}`]], '');
      expect(verifySchnorr(Buffer.from(first.id, 'hex'), Buffer.from(signer.pubkey, 'hex'), Buffer.from(first.sig, 'hex'))).toBe(true);
      expect(verifyEvent({ ...first })).toBe(true);
      const second = signer.sign(1, [], 'again');
      expect(verifyEvent({ ...second })).toBe(true);
      expect(second.sig.slice(0, 64)).not.toBe(first.sig.slice(0, 64));
    }
  });

  it('a signature does not verify for another message', () => {
    const signer = preparedSigner(randomBytes(32));
    const ev = signer.sign(1, [], 'a');
    expect(verifyEvent({ ...ev, content: 'b' })).toBe(false);
  });
});
