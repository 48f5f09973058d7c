/**
 * The native BIP-340 check is assembled from libsecp256k1 point operations, so it is held to
 * tiny-secp256k1's own `verifySchnorr` (the WASM build of the same library) on every edge the
 * assembly could get wrong: the parity of R, out-of-range r and s, keys off the curve.
 */
import { createHash, randomBytes } from 'node:crypto';
import { pointFromScalar, signSchnorr, verifySchnorr, xOnlyPointFromScalar } from 'tiny-secp256k1';
import { VERIFY_CODE, selectSchnorrBackend, verifyEventCore } from './signature.worker.js';
import { computeEventId } from '../nostr/event-id.js';

const N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
const P = 0xfffffffffffffffffffffffffffffffffffffffffffffffffffffffefffffc2fn;
const toBig = (b: Uint8Array): bigint => BigInt(`0x${Buffer.from(b).toString('hex')}`);
const to32 = (x: bigint): Buffer => Buffer.from(x.toString(16).padStart(64, '0'), 'hex');

function taggedChallenge(r: Buffer, px: Buffer, msg: Buffer): bigint {
  const tag = createHash('sha256').update('BIP0340/challenge').digest();
  return toBig(createHash('sha256').update(tag).update(tag).update(r).update(px).update(msg).digest()) % N;
}

/** A random scalar whose point has the requested y parity. */
function scalarWithParity(even: boolean): bigint {
  const k = toBig(randomBytes(32)) % N || 1n;
  const point = pointFromScalar(to32(k), true)!;
  return (point[0] === 0x02) === even ? k : N - k;
}

/**
 * Signs by hand, choosing the parity of R. With an odd R the pair passes an x-only check
 * (x(s·G − e·P) = r) but BIP-340 must refuse it.
 */
function signWithNonceParity(d: bigint, msg: Buffer, evenR: boolean): Buffer {
  const px = Buffer.from(xOnlyPointFromScalar(to32(d)));
  const k = scalarWithParity(evenR);
  const r = Buffer.from(xOnlyPointFromScalar(to32(k)));
  const e = taggedChallenge(r, px, msg);
  return Buffer.concat([r, to32((k + e * d) % N)]);
}

/** Secret key d with an even-y public point, as BIP-340 signing normalises it. */
const evenKey = (): { d: bigint; px: Buffer } => {
  const d = scalarWithParity(true);
  return { d, px: Buffer.from(xOnlyPointFromScalar(to32(d))) };
};

function eventWith(px: Buffer, sign: (id: Buffer) => Buffer) {
  const unsigned = { pubkey: px.toString('hex'), created_at: 1_700_000_000, kind: 1, tags: [], content: 'x' };
  const id = computeEventId(unsigned);
  return { ...unsigned, id, sig: sign(Buffer.from(id, 'hex')).toString('hex') };
}

type Case = [string, ReturnType<typeof eventWith>];

function cases(): Case[] {
  const sk = randomBytes(32);
  const px = Buffer.from(xOnlyPointFromScalar(sk));
  const valid = eventWith(px, (id) => Buffer.from(signSchnorr(id, sk, randomBytes(32))));
  const key = evenKey();
  const oddR = eventWith(key.px, (id) => signWithNonceParity(key.d, id, false));
  const evenR = eventWith(key.px, (id) => signWithNonceParity(key.d, id, true));
  return [
    ['a valid signature', valid],
    ['an s of n (out of range)', { ...valid, sig: valid.sig.slice(0, 64) + to32(N).toString('hex') }],
    ['an r of p (out of range)', { ...valid, sig: to32(P).toString('hex') + valid.sig.slice(64) }],
    ['a zero signature', { ...valid, sig: '0'.repeat(128) }],
    ['a flipped bit in s', { ...valid, sig: valid.sig.slice(0, 127) + (valid.sig[127] === '0' ? '1' : '0') }],
    ['an off-curve key', eventWith(Buffer.from('5'.padStart(64, '0'), 'hex'), (id) => Buffer.from(signSchnorr(id, sk, randomBytes(32))))],
    ['a key at x = p', { ...valid, pubkey: to32(P).toString('hex') }],
    ['a hand-made signature with even R', evenR],
    ['a hand-made signature with odd R', oddR],
  ];
}

describe('BIP-340 backends', () => {
  afterAll(() => selectSchnorrBackend('auto', import.meta.url));

  it('loads the native libsecp256k1 addon on this machine', () => {
    expect(selectSchnorrBackend('auto', import.meta.url)).toBe('native');
  });

  it('honours a wasm preference', () => {
    expect(selectSchnorrBackend('wasm', import.meta.url)).toBe('wasm');
  });

  it('hand-made signatures are valid BIP-340 exactly when R has even y', () => {
    const msg = randomBytes(32);
    const { d, px } = evenKey();
    expect(verifySchnorr(msg, px, signWithNonceParity(d, msg, true))).toBe(true);
    expect(verifySchnorr(msg, px, signWithNonceParity(d, msg, false))).toBe(false);
  });

  it.each(cases())('native and wasm agree on %s', (_label, event) => {
    selectSchnorrBackend('wasm', import.meta.url);
    const wasm = verifyEventCore(event);
    expect(selectSchnorrBackend('native', import.meta.url)).toBe('native');
    expect(verifyEventCore(event)).toBe(wasm);
  });

  it('agrees with wasm on 300 random valid and tampered signatures', () => {
    const verdicts: Array<[number, number]> = [];
    for (let i = 0; i < 300; i++) {
      const sk = randomBytes(32);
      const px = Buffer.from(xOnlyPointFromScalar(sk));
      const event = eventWith(px, (id) => Buffer.from(signSchnorr(id, sk, randomBytes(32))));
      const tampered = i % 2 === 0 ? event : { ...event, sig: event.sig.slice(0, 2 * (i % 64)) + 'ff' + event.sig.slice(2 * (i % 64) + 2) };
      selectSchnorrBackend('wasm', import.meta.url);
      const wasm = verifyEventCore(tampered);
      selectSchnorrBackend('native', import.meta.url);
      verdicts.push([verifyEventCore(tampered), wasm]);
    }
    expect(verdicts.filter(([n, w]) => n !== w)).toEqual([]);
    expect(verdicts.filter(([n]) => n === VERIFY_CODE.OK).length).toBeGreaterThanOrEqual(150);
  });
});

describe('the worker id', () => {
  it('is the id nostr/event-id.ts computes, on control, unicode and lone-surrogate text', () => {
    const sk = randomBytes(32);
    const pubkey = Buffer.from(xOnlyPointFromScalar(sk)).toString('hex');
    for (const content of ['', '\n"\\\r\t\b\f\u0001\u007f', '\u2028\u2029 😀 ünïcödé', '\ud800 lone \udfff']) {
      const unsigned = { pubkey, created_at: 1_700_000_000, kind: 9, tags: [['h', content], ['e', 'a'.repeat(64), '', 'root']], content };
      const id = computeEventId(unsigned);
      const sig = Buffer.from(signSchnorr(Buffer.from(id, 'hex'), sk, randomBytes(32))).toString('hex');
      expect({ content, code: verifyEventCore({ ...unsigned, id, sig }) }).toEqual({ content, code: VERIFY_CODE.OK });
    }
  });
});
