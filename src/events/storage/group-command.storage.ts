import { Injectable } from '@nestjs/common';
import { ChannelAccessService } from '../../channels/channel-access.service.js';
import { GroupCommandService, GroupEffect } from '../../channels/group-commands.service.js';
import { GroupStateService } from '../../channels/group-state.service.js';
import { isNamedGroupId } from '../../nostr/group-id.js';
import { NostrEvent } from '../../nostr/nostr.types.js';
import { mentionsOf } from '../event-derivation.js';
import { EventBus } from '../event-bus.js';
import { EventWriteRepository } from '../event-write.repository.js';
import { EventWriter, WriteOutcome } from '../event-writer.service.js';
import { StoredEventInput } from '../stored-event.js';
import { ThreadRoot, ThreadSummaryPublisher } from '../thread-summary.publisher.js';
import { StorageStrategy } from './storage-strategy.js';

/**
 * NIP-29 group commands in a channel: the command, its state change, the relay-signed group state
 * (39000–39003) and membership notices commit together. After the commit the channel's access
 * cache forgets what changed, and the new state, the notices and the summaries of threads whose
 * replies were deleted go out live.
 */
@Injectable()
export class GroupCommandStorage implements StorageStrategy {
  constructor(
    private readonly writer: EventWriter,
    private readonly repo: EventWriteRepository,
    private readonly groups: GroupCommandService,
    private readonly groupState: GroupStateService,
    private readonly access: ChannelAccessService,
    private readonly bus: EventBus,
    private readonly summaries: ThreadSummaryPublisher,
  ) {}

  /** Whether an event of `kind` in a channel is a group command. */
  handles(kind: number): boolean {
    return this.groups.isGroupCommand(kind);
  }

  async store(communityId: string, item: StoredEventInput): Promise<WriteOutcome> {
    const channelId = item.channelId!;
    let effect: GroupEffect | undefined;
    let state: NostrEvent[] = [];
    let notices: NostrEvent[] = [];
    let roots: ThreadRoot[] = [];
    const outcome = await this.writer.transaction(true, async (tx) => {
      const inserted = await this.writer.insertIn(tx, communityId, [item]);
      if (!inserted.has(item.event.id)) return 'duplicate' as const;
      effect = await this.groups.apply(tx, communityId, item.event, channelId);
      // Relay-signed NIP-29 state (39000–39003) replaces its previous versions in this transaction.
      state = await this.groupState.refresh(tx, communityId, item.event.kind, channelId);
      await this.writer.insertIn(tx, communityId, state.map((event) => ({ event, channelId, dTag: event.tags.find((t) => t[0] === 'd')![1], thread: null, mentions: [] })));
      // 44100/44101 for a private channel's adds and removals, stored globally and #p-gated, naming
      // the group as the command did.
      const h = item.event.tags.find((t) => t[0] === 'h')?.[1];
      const groupId = h !== undefined && isNamedGroupId(h) ? h : channelId;
      notices = this.groupState.membershipNotices(groupId, effect.added, effect.removed);
      await this.writer.insertIn(tx, communityId, notices.map((event) => ({ event, channelId: null, dTag: null, thread: null, mentions: mentionsOf(event) })));
      roots = await this.repo.unthread(tx, communityId, effect.deletedIds);
      return 'stored' as const;
    });
    if (effect?.accessChanged === 'everyone') this.access.invalidate(communityId);
    else for (const pk of effect?.accessChanged ?? []) this.access.invalidate(communityId, pk);
    for (const event of state) this.bus.publish({ communityId, event, channelId });
    for (const event of notices) this.bus.publish({ communityId, event, channelId: null });
    await this.summaries.publish(communityId, roots);
    return outcome;
  }
}
