/**
 * The relay-signed NIP-43 state (relay.md §1.3): a kind 8000 (member added) or 8001 (member
 * removed) naming the member, and the kind 13534 membership snapshot, each with the NIP-70 `["-"]`
 * tag. They are written in the transaction that changes `relay_members`, so the state and what the
 * relay says about it commit together; the caller publishes them for live delivery after commit.
 */
import { Injectable } from '@nestjs/common';
import { Kysely } from 'kysely';
import { RelaySigner } from '../common/relay-signer.js';
import { NostrEvent } from '../nostr/nostr.types.js';
import { DB } from '@buzz-relay/read-path';
import { RelayMembershipRepository } from '../moderation/relay-membership.repository.js';
import { EventWriteRepository } from '../events/event-write.repository.js';
import { EventWriter } from '../events/event-writer.service.js';
import { KIND } from '../nostr/kinds.js';

export type MembershipDelta = typeof KIND.NIP43_MEMBER_ADDED | typeof KIND.NIP43_MEMBER_REMOVED;

@Injectable()
export class Nip43State {
  constructor(
    private readonly signer: RelaySigner,
    private readonly writer: EventWriter,
    private readonly events: EventWriteRepository,
    private readonly members: RelayMembershipRepository,
  ) {}

  /** Stores the delta (when given) and a fresh snapshot; returns them in that order. */
  async record(tx: Kysely<DB>, communityId: string, delta: { kind: MembershipDelta; pubkey: string } | undefined): Promise<NostrEvent[]> {
    const out: NostrEvent[] = [];
    if (delta) {
      const event = this.signer.sign({ kind: delta.kind, tags: [['-'], ['p', delta.pubkey]], content: '' });
      await this.writer.insertIn(tx, communityId, [{ event, channelId: null, dTag: null, thread: null, mentions: [delta.pubkey] }]);
      out.push(event);
    }
    out.push(await this.snapshot(tx, communityId));
    return out;
  }

  /**
   * Replaces the 13534 snapshot. Its created_at is strictly newer than the one it replaces, so two
   * changes within one second still order correctly for clients that keep the newest.
   */
  private async snapshot(tx: Kysely<DB>, communityId: string): Promise<NostrEvent> {
    const kind = KIND.NIP43_MEMBERSHIP_LIST;
    await this.events.lockCoordinate(tx, communityId, this.signer.pubkey, kind, null, 'membership');
    const current = await this.events.findCurrentVersion(tx, communityId, this.signer.pubkey, kind, null);
    const createdAt = Math.max(Math.floor(Date.now() / 1000), current ? Number(current.created_at) + 1 : 0);
    const rows = await this.members.members(tx, communityId);
    const event = this.signer.sign({ kind, created_at: createdAt, content: '', tags: [['-'], ...rows.map((m) => ['member', m.pubkey])] });
    await this.writer.insertIn(tx, communityId, [{ event, channelId: null, dTag: null, thread: null, mentions: [] }]);
    await this.events.supersedeVersions(tx, communityId, this.signer.pubkey, kind, null, event.id);
    return event;
  }
}
