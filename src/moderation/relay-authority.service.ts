/**
 * Who may administer a community (docs/moderation.md): the configured owner
 * (`RELAY_OWNER_PUBKEY`) and operators (`RELAY_OPERATOR_PUBKEYS`) everywhere, then the
 * `relay_members` role. Read on the writer inside the command's transaction.
 */
import { Inject, Injectable } from '@nestjs/common';
import { Kysely } from 'kysely';
import type { AppConfig } from '../config/app-config.js';
import { APP_CONFIG } from '../config/config.tokens.js';
import { DB, RelayMemberRole } from '@buzz-relay/read-path';
import { RelayMembershipRepository } from './relay-membership.repository.js';

import { Rank, relayRank } from './ranks.js';

/** `owner` covers the configured owner, operators and owner rows: they hold the same powers. */
export type Authority = 'owner' | 'admin' | 'member' | 'none';

@Injectable()
export class RelayAuthority {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly members: RelayMembershipRepository,
  ) {}

  /** True for the configured owner and the operators, whatever the database says. */
  isConfigured(pubkey: string): boolean {
    return pubkey === this.config.relayOwnerPubkey || this.config.relayOperatorPubkeys.includes(pubkey);
  }

  isConfiguredOwner(pubkey: string): boolean {
    return pubkey === this.config.relayOwnerPubkey;
  }

  /** The relay rank (ranks.ts) of each key, in one statement, read in the caller's (writer) transaction. */
  async ranks(db: Kysely<DB>, communityId: string, pubkeys: readonly string[]): Promise<Map<string, Rank>> {
    const rows = await this.members.rolesOf(db, communityId, [...new Set(pubkeys)]);
    return new Map(pubkeys.map((pk) => [pk, relayRank(this.isConfigured(pk) ? 'owner' : (rows.get(pk) ?? 'none'))]));
  }

  async of(db: Kysely<DB>, communityId: string, pubkey: string): Promise<{ authority: Authority; row: RelayMemberRole | undefined }> {
    const row = await this.members.roleOf(db, communityId, pubkey);
    const authority: Authority = this.isConfigured(pubkey) ? 'owner' : (row ?? 'none');
    return { authority, row };
  }
}
