/**
 * Who holds relay-wide authority over channels (docs/moderation.md, "NIP-29 groups"): the owner
 * named by RELAY_OWNER_PUBKEY, the operators of RELAY_OPERATOR_PUBKEYS, and the community's relay
 * members whose NIP-43 role is `owner` or `admin`. They may run every NIP-29 admin command in
 * every channel of the community, whether or not they belong to it.
 */
import { Inject, Injectable, Logger } from '@nestjs/common';
import { Kysely } from 'kysely';
import type { AppConfig } from '../config/app-config.js';
import { APP_CONFIG } from '../config/config.tokens.js';
import { DB } from '../database/database.types.js';

@Injectable()
export class RelayAuthority {
  private readonly configured: ReadonlySet<string>;

  constructor(@Inject(APP_CONFIG) config: AppConfig) {
    if (config.relayOwnerPubkeyInvalid) new Logger('RelayAuthority').warn('RELAY_OWNER_PUBKEY is not 64 hex characters; ignored');
    this.configured = new Set([...(config.relayOwnerPubkey ? [config.relayOwnerPubkey] : []), ...config.relayOperatorPubkeys]);
  }

  /** The owner or an operator by configuration (no database read). */
  isConfigured(pubkey: string): boolean {
    return this.configured.has(pubkey);
  }

  /** Relay-wide authority in this community, read in the caller's (writer) transaction. */
  async holds(tx: Kysely<DB>, communityId: string, pubkey: string): Promise<boolean> {
    if (this.configured.has(pubkey)) return true;
    const row = await tx
      .selectFrom('relay_members')
      .select('role')
      .where('community_id', '=', communityId)
      .where('pubkey', '=', pubkey)
      .where('role', 'in', ['owner', 'admin'])
      .executeTakeFirst();
    return row !== undefined;
  }
}
