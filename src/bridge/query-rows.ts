/**
 * Small pieces the `/query` branches share (BridgeQueryService, ChannelWindowService,
 * ThreadWindowService): who reads, how a branch runs its follow-up reads, `consistency: "strong"`, the reader's visibility filter, and the aux
 * closure of a page.
 */
import { Kysely } from 'kysely';
import { DB } from '@buzz-relay/read-path';
import { ReadScope } from '../channels/read-scope.js';
import { eventVisibleToReader } from '../events/visibility.js';
import { NostrEvent, NostrFilter } from '../nostr/nostr.types.js';
import { AUX_KINDS, AUX_SECOND_HOP_KINDS } from './bridge-params.js';
import { BridgeReadsRepository } from './bridge-reads.repository.js';

export interface BridgeReader {
  readonly communityId: string;
  readonly pubkey: string;
  /** Aborted when the HTTP client went away before its answer: the catch-all read is cancelled. */
  readonly signal?: AbortSignal;
}

/** Runs a branch's follow-up reads where its page was read (one session, or the writer). */
export type Runner = <T>(work: (db: Kysely<DB>) => Promise<T>) => Promise<T>;

export function strong(f: NostrFilter): boolean {
  return f.extensions.consistency === 'strong';
}

export function visibleRows(rows: NostrEvent[], reader: string): NostrEvent[] {
  return rows.filter((ev) => eventVisibleToReader(ev, reader));
}

/** First hop: reactions, deletions and edits of the rows; second hop: deletions of those. */
export async function auxClosure(reads: BridgeReadsRepository, reader: string, scope: ReadScope, ids: string[], run: Runner): Promise<NostrEvent[]> {
  const auxScope: ReadScope = { ...scope, includeGlobal: true };
  const first = visibleRows(await run((db) => reads.referencing(db, auxScope, ids, AUX_KINDS)), reader);
  const second = visibleRows(await run((db) => reads.referencing(db, auxScope, first.map((e) => e.id), AUX_SECOND_HOP_KINDS)), reader);
  const seen = new Set<string>(ids);
  return [...first, ...second].filter((e) => !seen.has(e.id) && seen.add(e.id));
}
