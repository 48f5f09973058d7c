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

/** Row shape every event read selects. */
export interface EventRow {
  id: Buffer;
  pubkey: Buffer;
  created_at: string | number;
  kind: number;
  tags: string[][];
  content: string;
  sig: Buffer;
}

export function rowToEvent(row: EventRow): NostrEvent {
  return {
    id: row.id.toString('hex'),
    pubkey: row.pubkey.toString('hex'),
    created_at: Number(row.created_at),
    kind: row.kind,
    tags: row.tags,
    content: row.content,
    sig: row.sig.toString('hex'),
  };
}
