/**
 * Text Postgres stores and gives back unchanged (what the relay may acknowledge).
 *
 * A JS string is UTF-16. Two things in one do not survive a trip through Postgres:
 * - U+0000: neither `text` nor `jsonb` can hold it (`text` fails with 22021, `jsonb` with 22P02).
 * - An unpaired surrogate (a U+D800–U+DBFF code unit not followed by a U+DC00–U+DFFF one, or a
 *   U+DC00–U+DFFF not preceded by one): pg sends parameters as UTF-8, which has no encoding for
 *   it, so a `text` parameter arrives as U+FFFD (a different event, whose id no longer matches),
 *   and the `\uD800` escape JSON.stringify writes for it is refused by `jsonb` (22P02).
 * Every other string a JS engine can hold (astral characters, U+FFFE/U+FFFF, C0 controls,
 * U+2028/2029, BOMs) is valid UTF-8 and round-trips byte for byte.
 *
 * The scan is over UTF-16 code units (no `u` flag), which is what finds unpaired halves.
 */
const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * What in `text` the relay cannot store exactly, worded for a client (`a NUL character (U+0000)`,
 * `an unpaired surrogate (U+D800)`), or null when it stores exactly.
 */
export function unstorableText(text: string): string | null {
  // Fast path for the usual clean text (native scans: about 0.4 ms for 256 KiB of emoji-rich
  // content against 1.7 ms for the regex alone); the regex only runs to name what it found.
  if (isWellFormed(text) && !text.includes('\u0000')) return null;
  const found = UNSTORABLE.exec(text);
  if (found === null) return null;
  const unit = found[0].charCodeAt(0);
  if (unit === 0) return 'a NUL character (U+0000)';
  return `an unpaired surrogate (U+${unit.toString(16).toUpperCase()})`;
}

/** `String.prototype.isWellFormed` (ES2024, in Node since 20): no unpaired surrogate. The TS lib here is ES2022. */
function isWellFormed(text: string): boolean {
  return (text as unknown as { isWellFormed(): boolean }).isWellFormed();
}
