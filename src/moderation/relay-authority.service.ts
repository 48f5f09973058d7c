/**
 * Who may administer a community (docs/moderation.md): the configured owner
 * (`RELAY_OWNER_PUBKEY`) and operators (`RELAY_OPERATOR_PUBKEYS`) everywhere, then the
 * `relay_members` role. Read on the writer inside the command's transaction.
 */
import { Inject, Injectable } from '@nestjs/common';
import { Kysely } from 'kysely';
import type { AppConfig } from '../config/app-config.js';
import { APP_CONFIG } from '../config/config.tokens.js';
import { DB, RelayMemberRole } from '../database/database.types.js';
import { RelayMembershipRepository } from './relay-membership.repository.js';

/** `owner` covers the configured owner, operators and owner rows: they hold the same powers. */
export type Authority = 'owner' | 'admin' | 'member' | 'none';

const RANK: Record<Authority, number> = { owner: 3, admin: 2, member: 1, none: 0 };

export function outranks(actor: Authority, target: Authority): boolean {
  return RANK[actor] > RANK[target];
}

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

  /**
   * Relay-wide authority over the community's channels (NIP-29 admin commands in every channel,
   * member or not): the configured owner and operators, and NIP-43 owners and admins. Read in
   * the caller's (writer) transaction.
   */
  async holds(db: Kysely<DB>, communityId: string, pubkey: string): Promise<boolean> {
    const { authority } = await this.of(db, communityId, pubkey);
    return authority === 'owner' || authority === 'admin';
  }

  async of(db: Kysely<DB>, communityId: string, pubkey: string): Promise<{ authority: Authority; row: RelayMemberRole | undefined }> {
    const row = await this.members.roleOf(db, communityId, pubkey);
    const authority: Authority = this.isConfigured(pubkey) ? 'owner' : (row ?? 'none');
    return { authority, row };
  }
}
