/**
 * A pubkey as operators type it: 64 hex characters or a NIP-19 `npub1…` (bech32, BIP-173).
 * nostr-tools' nip19 would do this, but nostr-tools is only a development dependency here (the
 * tests' client); the decoder needs 40 lines, so the relay carries its own rather than a new
 * runtime dependency. It checks the checksum, the `npub` prefix, and the 32-byte payload.
 */
import { lowerHex64 } from './hex.js';
const CHARSET = 'qpzry9x8gf2tvdw0s3jn54khce6mua7l';
const GENERATORS = [0x3b6a57b2, 0x26508e6d, 0x1ea119fa, 0x3d4233dd, 0x2a1462b3];

export type PubkeyParse = { ok: true; pubkey: string } | { ok: false; reason: string };

export function parsePubkey(input: string): PubkeyParse {
  const value = input.trim();
  const hex = lowerHex64(value);
  if (hex !== undefined) return { ok: true, pubkey: hex };
  // A pasted secret key is refused without being repeated: the message may end up in a terminal log or a ticket.
  if (/^nsec1/i.test(value)) return { ok: false, reason: 'that is a secret key (nsec): give the public key (npub or 64-hex), and keep the nsec private' };
  if (!/^npub1/i.test(value)) return { ok: false, reason: `not a 64-hex pubkey or an npub: ${JSON.stringify(value.slice(0, 80))}` };
  const bytes = decodeBech32(value, 'npub');
  if (!bytes.ok) return bytes;
  if (bytes.data.length !== 32) return { ok: false, reason: `npub must carry 32 bytes, got ${bytes.data.length}` };
  return { ok: true, pubkey: Buffer.from(bytes.data).toString('hex') };
}

function polymod(values: readonly number[]): number {
  let chk = 1;
  for (const v of values) {
    const top = chk >>> 25;
    chk = ((chk & 0x1ffffff) << 5) ^ v;
    for (let i = 0; i < 5; i++) if ((top >>> i) & 1) chk ^= GENERATORS[i];
  }
  return chk;
}

function decodeBech32(text: string, prefix: string): { ok: true; data: number[] } | { ok: false; reason: string } {
  if (text !== text.toLowerCase() && text !== text.toUpperCase()) return { ok: false, reason: 'npub mixes upper and lower case' };
  const lower = text.toLowerCase();
  const sep = lower.lastIndexOf('1');
  if (lower.slice(0, sep) !== prefix) return { ok: false, reason: `expected the ${prefix} prefix` };
  const words: number[] = [];
  for (const c of lower.slice(sep + 1)) {
    const w = CHARSET.indexOf(c);
    if (w < 0) return { ok: false, reason: `npub contains an invalid character ${JSON.stringify(c)}` };
    words.push(w);
  }
  if (words.length < 6) return { ok: false, reason: 'npub is too short' };
  const hrp = [...prefix].map((c) => c.charCodeAt(0));
  const expanded = [...hrp.map((c) => c >> 5), 0, ...hrp.map((c) => c & 31)];
  if (polymod([...expanded, ...words]) !== 1) return { ok: false, reason: 'npub checksum does not match (a typo?)' };
  // 5-bit words to bytes; leftover bits must be zero padding.
  let acc = 0;
  let bits = 0;
  const data: number[] = [];
  for (const w of words.slice(0, -6)) {
    acc = (acc << 5) | w;
    bits += 5;
    if (bits >= 8) {
      bits -= 8;
      data.push((acc >> bits) & 0xff);
    }
  }
  if (bits >= 5 || ((acc << (8 - bits)) & 0xff) !== 0) return { ok: false, reason: 'npub has invalid padding' };
  return { ok: true, data };
}
