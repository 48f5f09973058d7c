/**
 * Core Nostr wire types (NIP-01). The hex helpers are in `hex.ts`.
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
 * A parsed NIP-01 REQ/COUNT filter (see `parseFilter` in `filter.ts`).
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
