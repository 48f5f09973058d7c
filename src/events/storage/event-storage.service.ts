/**
 * Stores an event that passed the gates, by kind: a group command in a channel, a reaction, a
 * deletion, a replaceable or addressable event each take their own transaction (a strategy beside
 * this file); every other event joins the writer's grouped commit. Once it committed, the author
 * is owed read-your-writes (RoutedReader.noteWrite), before ingest answers OK.
 */
import { Injectable } from '@nestjs/common';
import { RoutedReader } from '@buzz-relay/read-path';
import { isAddressable, isReplaceable, KIND } from '../../nostr/kinds.js';
import { EventWriter, WriteOutcome } from '../event-writer.service.js';
import { StoredEventInput } from '../stored-event.js';
import { DeletionStorage } from './deletion.storage.js';
import { GroupCommandStorage } from './group-command.storage.js';
import { ReactionStorage } from './reaction.storage.js';
import { ReplaceableStorage } from './replaceable.storage.js';
import { StorageStrategy } from './storage-strategy.js';

@Injectable()
export class EventStorage {
  constructor(
    private readonly groupCommands: GroupCommandStorage,
    private readonly reactions: ReactionStorage,
    private readonly deletions: DeletionStorage,
    private readonly replaceables: ReplaceableStorage,
    private readonly writer: EventWriter,
    private readonly routed: RoutedReader,
  ) {}

  async store(communityId: string, item: StoredEventInput): Promise<WriteOutcome> {
    const strategy = this.strategyFor(item);
    const outcome = await (strategy ? strategy.store(communityId, item) : this.writer.write(communityId, item));
    if (outcome === 'stored') this.routed.noteWrite({ communityId, pubkey: item.event.pubkey });
    return outcome;
  }

  private strategyFor({ event, channelId }: StoredEventInput): StorageStrategy | undefined {
    if (channelId && this.groupCommands.handles(event.kind)) return this.groupCommands;
    if (event.kind === KIND.REACTION) return this.reactions;
    if (event.kind === KIND.DELETION) return this.deletions;
    if (isReplaceable(event.kind) || isAddressable(event.kind)) return this.replaceables;
    return undefined;
  }
}
