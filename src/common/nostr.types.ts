/**
 * Core Nostr wire types (NIP-01) and the hex helpers every layer shares.
 *
 * Everything here is pure: no I/O, no NestJS.
 */

/** A signed NIP-01 event exactly as it travels on the wire. */
export interface NostrEvent {
  /** 32-byte SHA-256 of the canonical serialisation, 64 lowercase hex. */
  id: string;
  /** 32-byte x-only public key, 64 lowercase hex. */
  pubkey: string;
  /** Unix seconds. */
  created_at: number;
  /** 0..65535. */
  kind: number;
  tags: string[][];
  content: string;
  /** 64-byte BIP-340 Schnorr signature, 128 lowercase hex. */
  sig: string;
}

/**
 * A parsed NIP-01 REQ/COUNT filter (see `parseFilter` in `events/filter.ts`).
 *
 * `tags` holds the `#<name>` entries keyed by the name without `#` (single- or multi-letter,
 * e.g. `e`, `h`, `buzz-channel`). `extensions` keeps every field the standard parser does not
 * know (`consistency`, `top_level`, `feed_types`, `depth_limit`, `page`, …) as raw JSON for the
 * HTTP bridge. Both are always present, possibly empty. Treat a filter as immutable once built.
 */
export interface NostrFilter {
  ids?: string[];
  authors?: string[];
  kinds?: number[];
  since?: number;
  until?: number;
  limit?: number;
  search?: string;
  /** WS/bridge composite-cursor tiebreak (§2.3); lowercase 64-hex; only with `until`. */
  before_id?: string;
  tags: Record<string, string[]>;
  extensions: Record<string, unknown>;
}

const HEX64 = /^[0-9a-f]{64}$/;
const HEX128 = /^[0-9a-f]{128}$/;
const ANY_HEX = /^(?:[0-9a-fA-F]{2})*$/;

/** True for exactly 64 lowercase hex characters (an event id or a pubkey). */
export function isHex64(value: unknown): value is string {
  return typeof value === 'string' && HEX64.test(value);
}

/** True for exactly 128 lowercase hex characters (a Schnorr signature). */
export function isHex128(value: unknown): value is string {
  return typeof value === 'string' && HEX128.test(value);
}

/**
 * Decode hex into a Buffer. Throws on odd length or non-hex characters instead of silently
 * truncating the way `Buffer.from(hex, 'hex')` does.
 */
export function hexToBuf(hex: string): Buffer {
  if (!ANY_HEX.test(hex)) {
    throw new TypeError('hexToBuf: input is not an even-length hex string');
  }
  return Buffer.from(hex, 'hex');
}

/** Encode bytes as lowercase hex. */
export function bufToHex(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex');
}
