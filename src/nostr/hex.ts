/**
 * Hex as the wire carries it: the one place the relay spells a hex pattern.
 *
 * NIP-01 puts event ids, pubkeys and signatures on the wire as lowercase hex, and an event is
 * refused otherwise ({@link isHex64}, {@link isHex128}). Uppercase is accepted, and lowered, only
 * where the value is not an event's own field: see {@link lowerHex64}.
 */

const HEX64 = /^[0-9a-f]{64}$/;
const HEX64_ANY_CASE = /^[0-9a-f]{64}$/i;
const HEX128 = /^[0-9a-f]{128}$/;
const ANY_HEX = /^(?:[0-9a-fA-F]{2})*$/;

/** True for exactly 64 lowercase hex characters (an event id or a pubkey). */
export function isHex64(value: unknown): value is string {
  return typeof value === 'string' && HEX64.test(value);
}

/**
 * 64 hex characters in either case, returned lowercase; undefined for anything else.
 *
 * For the places the relay has always taken either case and stored the value lowered: a filter's
 * `before_id` cursor on the WebSocket, the targets of the executed command kinds (the `p` of a
 * moderation or relay-admin command, a report's `e`/`p`, a resolution's `report`), and keys typed
 * by hand (an operator's pubkey, a client's secret key). An event's own id, pubkey and sig, and
 * tag values compared with stored ids (`e` and `p` references), are lowercase only: {@link isHex64}.
 */
export function lowerHex64(value: unknown): string | undefined {
  return typeof value === 'string' && HEX64_ANY_CASE.test(value) ? value.toLowerCase() : undefined;
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
