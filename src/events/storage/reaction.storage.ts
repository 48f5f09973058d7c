import { Injectable } from '@nestjs/common';
import { reject } from '../../nostr/refusal.js';
import { lastHexTag } from '../event-derivation.js';
import { EventWriteRepository } from '../event-write.repository.js';
import { EventWriter, WriteOutcome } from '../event-writer.service.js';
import { INGEST_REFUSALS } from '../ingest.refusals.js';
import { StoredEventInput } from '../stored-event.js';
import { StorageStrategy } from './storage-strategy.js';

/** Kind 7: one active reaction per (actor, target, emoji); the row and the event commit together. */
@Injectable()
export class ReactionStorage implements StorageStrategy {
  constructor(
    private readonly writer: EventWriter,
    private readonly repo: EventWriteRepository,
  ) {}

  store(communityId: string, item: StoredEventInput): Promise<WriteOutcome> {
    const { event } = item;
    const target = lastHexTag(event, 'e')!;
    const emoji = event.content === '' ? '+' : event.content;
    if ([...emoji].length > 64) reject(INGEST_REFUSALS.reactionEmojiTooLong);
    return this.writer.transaction(item.channelId !== null, async (tx) => {
      const inserted = await this.writer.insertIn(tx, communityId, [item]);
      if (!inserted.has(event.id)) return 'duplicate';
      const fresh = await this.repo.insertReaction(tx, communityId, target, event.pubkey, emoji, event.id);
      if (!fresh) reject(INGEST_REFUSALS.reactionExists);
      return 'stored';
    });
  }
}
