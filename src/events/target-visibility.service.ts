/**
 * Which events a write may name (a reply's parent, a reaction's or deletion's target, an edited
 * message, a reported event). An event the writer may not read is treated as one that does not
 * exist, so every write path answers both with the same `OK` (ingest.refusals.ts, TARGET_NOT_FOUND)
 * and none is an oracle for which ids a private channel holds.
 */
import { Injectable } from '@nestjs/common';
import { Kysely } from 'kysely';
import { ChannelRepository } from '../channels/channel.repository.js';
import { DB } from '@buzz-relay/read-path';

/** What a write needs to know of an event it names. */
export interface NamedTarget {
  readonly pubkey: string;
  readonly channelId: string | null;
}

@Injectable()
export class TargetVisibility {
  constructor(private readonly channels: ChannelRepository) {}

  /**
   * `target` as `writer` may name it: undefined when it is missing, or when it is another key's
   * event in a channel the writer cannot read now (not open, not a current member). The writer's
   * own events and channel-less ones are always named: naming them tells nothing new. Read on
   * `db`, a writer handle, so a member who joined a moment ago is not turned away.
   */
  async seen<T extends NamedTarget>(db: Kysely<DB>, communityId: string, writer: string, target: T | undefined): Promise<T | undefined> {
    if (target === undefined || target.channelId === null || target.pubkey === writer) return target;
    const readable = await this.channels.readableAmong(db, communityId, writer, [target.channelId]);
    return readable.length > 0 ? target : undefined;
  }
}
