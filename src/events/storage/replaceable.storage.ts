import { Injectable } from '@nestjs/common';
import { NostrEvent } from '../../nostr/nostr.types.js';
import { reject } from '../../nostr/refusal.js';
import { EventWriteRepository } from '../event-write.repository.js';
import { EventWriter, WriteOutcome } from '../event-writer.service.js';
import { INGEST_REFUSALS } from '../ingest.refusals.js';
import { StoredEventInput } from '../stored-event.js';
import { StorageStrategy } from './storage-strategy.js';

/**
 * Replaceable (0, 3, 10000–19999) and addressable (30000–39999) events: the new version replaces
 * the stored ones under the coordinate's lock. Stale-write protection: an older created_at (or a
 * higher id at the same second) loses.
 */
@Injectable()
export class ReplaceableStorage implements StorageStrategy {
  constructor(
    private readonly writer: EventWriter,
    private readonly repo: EventWriteRepository,
  ) {}

  store(communityId: string, item: StoredEventInput): Promise<WriteOutcome> {
    const { event, dTag } = item;
    return this.writer.transaction(item.channelId !== null, async (tx) => {
      await this.repo.lockCoordinate(tx, communityId, event.pubkey, event.kind, dTag);
      const current = await this.repo.findCurrentVersion(tx, communityId, event.pubkey, event.kind, dTag);
      if (current && current.id.toString('hex') === event.id) return 'duplicate';
      if (current && newerOrEqual(current, event)) reject(INGEST_REFUSALS.newerVersionStored);
      const inserted = await this.writer.insertIn(tx, communityId, [item]);
      if (!inserted.has(event.id)) return 'duplicate';
      await this.repo.supersedeVersions(tx, communityId, event.pubkey, event.kind, dTag, event.id);
      return 'stored';
    }, replacementOperation(dTag));
  }
}

function newerOrEqual(current: { id: Buffer; created_at: string }, event: NostrEvent): boolean {
  const at = Number(current.created_at);
  return at > event.created_at || (at === event.created_at && current.id.toString('hex') < event.id);
}

/**
 * database.md §6.3's two replacement transactions: an addressable event (kinds 30000–39999, replaced per
 * `d` tag) is `replace_addressable_event`; a replaceable one (0, 3, 10000–19999, one per pubkey
 * and kind) is `replace_parameterized_event`.
 */
function replacementOperation(dTag: string | null): 'replace_addressable_event' | 'replace_parameterized_event' {
  return dTag === null ? 'replace_parameterized_event' : 'replace_addressable_event';
}
