import { Injectable } from '@nestjs/common';
import { deletionTarget } from '../../nostr/deletion-target.js';
import { reject } from '../../nostr/refusal.js';
import { EventWriteRepository } from '../event-write.repository.js';
import { EventWriter, WriteOutcome } from '../event-writer.service.js';
import { StoredEventInput } from '../stored-event.js';
import { ThreadRoot, ThreadSummaryPublisher } from '../thread-summary.publisher.js';
import { StorageStrategy } from './storage-strategy.js';

/**
 * Kind 5, NIP-09 with exactly one target (relay.md §1.3): stores the deletion and soft-deletes the
 * author's own target; a deleted reply lowers its thread's counts in the same transaction, and its
 * root's new summary goes out after the commit.
 */
@Injectable()
export class DeletionStorage implements StorageStrategy {
  constructor(
    private readonly writer: EventWriter,
    private readonly repo: EventWriteRepository,
    private readonly summaries: ThreadSummaryPublisher,
  ) {}

  async store(communityId: string, item: StoredEventInput): Promise<WriteOutcome> {
    const { event } = item;
    const target = deletionTarget(event);
    if (!target.ok) return reject(target.reason);
    let roots: ThreadRoot[] = [];
    const outcome = await this.writer.transaction(item.channelId !== null, async (tx) => {
      const inserted = await this.writer.insertIn(tx, communityId, [item]);
      if (!inserted.has(event.id)) return 'duplicate' as const;
      if (target.id) roots = await this.repo.unthread(tx, communityId, await this.repo.softDeleteByIds(tx, communityId, event.pubkey, [target.id]));
      const c = target.coordinate;
      if (c && c.pubkey === event.pubkey) await this.repo.softDeleteCoordinate(tx, communityId, c.pubkey, c.kind, c.d, event.created_at);
      return 'stored' as const;
    });
    await this.summaries.publish(communityId, roots);
    return outcome;
  }
}
