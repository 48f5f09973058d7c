import { NostrEvent } from '../common/nostr.types.js';

/** An event ready for storage, with what ingest derived from it. */
export interface StoredEventInput {
  readonly event: NostrEvent;
  readonly channelId: string | null;
  readonly dTag: string | null;
  readonly thread: ThreadPlacement | null;
  /** Lowercase 64-hex pubkeys of its well-formed `p` tags, deduplicated. */
  readonly mentions: readonly string[];
}

/** Where a thread-capable channel message sits; null parent = top level. */
export interface ThreadPlacement {
  readonly parent: ThreadAnchor | null;
  readonly root: ThreadAnchor | null;
  readonly depth: number;
}

export interface ThreadAnchor {
  readonly id: string;
  readonly createdAt: number;
}

/** Row shape every event read selects (EVENT_COLUMNS: binary columns already as lowercase hex). */
export interface EventRow {
  id: string;
  pubkey: string;
  created_at: string | number;
  kind: number;
  tags: string[][];
  content: string;
  sig: string;
}

export function rowToEvent(row: EventRow): NostrEvent {
  return {
    id: row.id,
    pubkey: row.pubkey,
    created_at: Number(row.created_at),
    kind: row.kind,
    tags: row.tags,
    content: row.content,
    sig: row.sig,
  };
}
