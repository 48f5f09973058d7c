import { NostrEvent } from '../nostr/nostr.types.js';

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

/** EventRow with `tags` still the JSON text Postgres printed (EVENT_COLUMN_LIST_TAGS_TEXT). */
export interface EventTextRow extends Omit<EventRow, 'tags'> {
  tags: string;
}

/**
 * A history row as an event, for the REQ hot path: the tags stay the JSON text Postgres printed
 * and are parsed only if something reads `tags` (a tag filter's re-check, a gated kind's
 * visibility rule), and `toWire()` builds the event's JSON by concatenation around that text.
 * Parsing the tags and serialising the whole event again took about 3 µs per event in a
 * micro-benchmark here, against 0.3 µs for the concatenation: some 60 µs saved on a 20-event
 * page. `toJSON()` gives the plain event, so JSON.stringify and anything that serialises through
 * it see a normal event; a spread would not (tags live on the prototype), so this type stays on
 * the read path that streams it.
 */
export class StoredEvent implements NostrEvent {
  readonly id: string;
  readonly pubkey: string;
  readonly created_at: number;
  readonly kind: number;
  readonly content: string;
  readonly sig: string;
  private readonly tagsJson: string;
  private parsedTags: string[][] | undefined;
  private wire: string | undefined;

  constructor(row: EventTextRow) {
    this.id = row.id;
    this.pubkey = row.pubkey;
    this.created_at = Number(row.created_at);
    this.kind = row.kind;
    this.tagsJson = row.tags;
    this.content = row.content;
    this.sig = row.sig;
  }

  /** Characters of the tags as Postgres printed them (for eventHeapBytes, without parsing them). */
  get tagsTextLength(): number {
    return this.tagsJson.length;
  }

  get tags(): string[][] {
    return (this.parsedTags ??= JSON.parse(this.tagsJson) as string[][]);
  }

  /**
   * NIP-01 JSON of the event (tags as Postgres printed them: valid JSON, spacing aside), built
   * once: the rows of a shared history read reach every subscription that joined it.
   */
  toWire(): string {
    return (this.wire ??=
      `{"id":"${this.id}","pubkey":"${this.pubkey}","created_at":${this.created_at},"kind":${this.kind},` +
      `"tags":${this.tagsJson},"content":${JSON.stringify(this.content)},"sig":"${this.sig}"}`);
  }

  toJSON(): NostrEvent {
    return { id: this.id, pubkey: this.pubkey, created_at: this.created_at, kind: this.kind, tags: this.tags, content: this.content, sig: this.sig };
  }
}

/** An event's NIP-01 JSON: StoredEvent builds its own, anything else goes through JSON.stringify. */
export function eventJson(ev: NostrEvent): string {
  return ev instanceof StoredEvent ? ev.toWire() : JSON.stringify(ev);
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

/**
 * What a row costs in a byte-capped page (byteCapped) besides its content and tags: the fixed
 * part (ids, key, signature, numbers) and the row's framing.
 */
export const PAGE_ROW_FIXED_BYTES = 400;

/**
 * Memory a history row takes per byte of its text: the row's own strings, the wire JSON built
 * from it once (toWire) and the EVENT frame around that (history-page.ts), one byte a character
 * each for ASCII text; a two-byte string costs more per character but is fewer per byte of UTF-8.
 */
export const HEAP_BYTES_PER_TEXT_BYTE = 3;

/**
 * What a history row holds in memory, estimated: its content and tags at HEAP_BYTES_PER_TEXT_BYTE,
 * plus its fixed part (hex ids, key and signature, numbers, the objects). Leases of the
 * `history` memory pool count in these.
 */
export function eventHeapBytes(ev: NostrEvent): number {
  const tags = ev instanceof StoredEvent ? ev.tagsTextLength : JSON.stringify(ev.tags).length;
  return HEAP_BYTES_PER_TEXT_BYTE * (ev.content.length + tags + PAGE_ROW_FIXED_BYTES);
}
