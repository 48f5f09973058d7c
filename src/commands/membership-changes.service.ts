/**
 * A change of the relay's membership (9030–9032, the NIP-43 leave) committed with what the relay
 * says about it: one transaction holds the change and, when something changed, its relay-signed
 * NIP-43 events (Nip43State). After the commit the events go to live subscribers, and a removal is
 * announced so that pods enforcing membership revoke the removed key's open sockets.
 */
import { Injectable, Logger } from '@nestjs/common';
import { Kysely } from 'kysely';
import { DB } from '@buzz-relay/read-path';
import { AccessRevocations } from '../moderation/access-revocations.js';
import { KIND } from '../nostr/kinds.js';
import { NostrEvent } from '../nostr/nostr.types.js';
import { EventBus } from '../events/event-bus.js';
import { EventWriter } from '../events/event-writer.service.js';
import { MembershipDelta, Nip43State } from './nip43-state.service.js';

/** What a membership command did, as its transaction returns it. */
export interface MembershipChange {
  readonly message: string;
  /** The delta to announce; undefined when nothing changed (a re-add) or for a role change. */
  readonly delta?: { kind: MembershipDelta; pubkey: string };
  readonly changed: boolean;
}

@Injectable()
export class MembershipChanges {
  /** The commands' own logger name: the log lines are the relay-admin commands'. */
  private readonly logger = new Logger('RelayAdminCommands');

  constructor(
    private readonly writer: EventWriter,
    private readonly state: Nip43State,
    private readonly bus: EventBus,
    private readonly revocations: AccessRevocations,
  ) {}

  /** Runs `change` in the membership transaction; resolves with its `OK` message. */
  async commit(communityId: string, change: (tx: Kysely<DB>) => Promise<MembershipChange>): Promise<string> {
    let published: NostrEvent[] = [];
    const result = await this.writer.transaction(false, async (tx) => {
      const c = await change(tx);
      if (c.changed) published = await this.state.record(tx, communityId, c.delta);
      return c;
    }, 'publish_nip43_membership_locked');
    for (const event of published) this.bus.publish({ communityId, event, channelId: null });
    // Announced whatever this process's setting: the pods that enforce membership act on it (the CLI has no sockets).
    if (result.delta?.kind === KIND.NIP43_MEMBER_REMOVED) {
      this.logger.log({ communityId, pubkey: result.delta.pubkey }, 'relay member removed');
      const revocation = { communityId, pubkey: result.delta.pubkey, reason: 'not_relay_member' as const };
      // After the OK of the command that caused it has been queued (the leaver's own socket closes too).
      setImmediate(() => this.revocations.announce(revocation));
    }
    return result.message;
  }
}
