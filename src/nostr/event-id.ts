/**
 * The canonical NIP-01 event id.
 *
 * `events/signature.worker.ts` hashes with a private copy of these two lines, because that file
 * must stay self-contained (see its header); `schnorr-backend.spec.ts` checks that the two agree.
 */
import { createHash } from 'node:crypto';
import type { NostrEvent } from './nostr.types.js';

/**
 * Lowercase hex SHA-256 of the NIP-01 serialisation `[0,pubkey,created_at,kind,tags,content]`.
 *
 * `JSON.stringify` is the NIP-01 serialiser in practice: no whitespace, the short escapes for
 * `"` `\` `\n` `\r` `\t` `\b` `\f`, `\u00XX` for the other C0 controls, every other character
 * (U+2028/2029, non-BMP) verbatim and lone surrogates as `\uXXXX`. That is byte-for-byte what
 * nostr-tools' `getEventHash` hashes; `event-validation.spec.ts` checks it on control and unicode
 * content.
 */
export function computeEventId(ev: Pick<NostrEvent, 'pubkey' | 'created_at' | 'kind' | 'tags' | 'content'>): string {
  const canonical = JSON.stringify([0, ev.pubkey, ev.created_at, ev.kind, ev.tags, ev.content]);
  return createHash('sha256').update(canonical, 'utf8').digest('hex');
}
