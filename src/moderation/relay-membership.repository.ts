/**
 * Writes and writer reads of relay membership (`relay_members`), bans and timeouts for the
 * relay-admin (9030–9032, 28936) and moderation (9040–9043) commands and the operator CLI.
 * Every read here decides a permission, so every read is on the writer (relay.md §4.4). Methods
 * take the transaction they belong to: a command's state change, its relay-signed 8000/8001 and
 * the 13534 snapshot commit together.
 */
import { Injectable } from '@nestjs/common';
import { Kysely, sql } from 'kysely';
import { DatabaseService, DB, RelayMemberRole } from '@buzz-relay/read-path';
import type { WriterOperation } from '@buzz-relay/read-path';

export interface RelayMemberRow {
  readonly pubkey: string;
  readonly role: RelayMemberRole;
}

@Injectable()
export class RelayMembershipRepository {
  constructor(private readonly database: DatabaseService) {}

  /** One labelled writer checkout (database.md §6.2), for callers outside a transaction. */
  withWriter<T>(operation: WriterOperation, work: (db: Kysely<DB>) => Promise<T>): Promise<T> {
    return this.database.withWriter(operation, work);
  }

  /** The pubkey's row role, locked against concurrent role changes until the transaction ends. */
  async roleOf(db: Kysely<DB>, communityId: string, pubkey: string): Promise<RelayMemberRole | undefined> {
    const row = await db
      .selectFrom('relay_members')
      .select('role')
      .where('community_id', '=', communityId)
      .where('pubkey', '=', pubkey)
      .forShare()
      .executeTakeFirst();
    return row?.role;
  }

  /** roleOf for several keys in one statement (rows locked likewise); keys without a row are absent. */
  async rolesOf(db: Kysely<DB>, communityId: string, pubkeys: readonly string[]): Promise<Map<string, RelayMemberRole>> {
    if (pubkeys.length === 0) return new Map();
    const rows = await db
      .selectFrom('relay_members')
      .select(['pubkey', 'role'])
      .where('community_id', '=', communityId)
      .where('pubkey', 'in', pubkeys)
      .forShare()
      .execute();
    return new Map(rows.map((r) => [r.pubkey, r.role]));
  }

  /** Adds the pubkey unless it is a member already (an existing role is never overwritten). */
  async insertMember(db: Kysely<DB>, communityId: string, pubkey: string, role: RelayMemberRole, addedBy: string | null): Promise<boolean> {
    const row = await db
      .insertInto('relay_members')
      .values({ community_id: communityId, pubkey, role, added_by: addedBy })
      .onConflict((oc) => oc.columns(['community_id', 'pubkey']).doNothing())
      .returning('pubkey')
      .executeTakeFirst();
    return row !== undefined;
  }

  /** Deletes the row when its role is one of `roles`; the deleted role, or undefined. */
  async deleteMember(db: Kysely<DB>, communityId: string, pubkey: string, roles: readonly RelayMemberRole[]): Promise<RelayMemberRole | undefined> {
    const row = await db
      .deleteFrom('relay_members')
      .where('community_id', '=', communityId)
      .where('pubkey', '=', pubkey)
      .where('role', 'in', [...roles])
      .returning('role')
      .executeTakeFirst();
    return row?.role;
  }

  /** Sets a non-owner row's role; false when there is no such row. */
  async setRole(db: Kysely<DB>, communityId: string, pubkey: string, role: Exclude<RelayMemberRole, 'owner'>): Promise<boolean> {
    const result = await db
      .updateTable('relay_members')
      .set({ role })
      .where('community_id', '=', communityId)
      .where('pubkey', '=', pubkey)
      .where('role', '<>', 'owner')
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  /** Every member in the order they joined (the 13534 snapshot and `list-members`). */
  async members(db: Kysely<DB>, communityId: string): Promise<RelayMemberRow[]> {
    return db
      .selectFrom('relay_members')
      .select(['pubkey', 'role'])
      .where('community_id', '=', communityId)
      .orderBy('created_at')
      .orderBy('pubkey')
      .execute();
  }

  /**
   * Makes the configured owner an owner of every community (start-up and create-community): one
   * statement, idempotent. Returns the communities whose row was created or promoted.
   */
  async ensureOwnerEverywhere(pubkey: string): Promise<string[]> {
    const { rows } = await this.database.withWriter('bootstrap', (db) =>
      sql<{ community_id: string }>`
        insert into relay_members (community_id, pubkey, role, added_by)
        select c.id, ${pubkey}, 'owner', null from communities c
        on conflict (community_id, pubkey) do update set role = 'owner' where relay_members.role <> 'owner'
        returning community_id`.execute(db),
    );
    return rows.map((r) => r.community_id);
  }

  /** Bans the key (permanently unless `expiresAt`); a second ban replaces the first's terms. */
  async upsertBan(db: Kysely<DB>, communityId: string, pubkey: string, bannedBy: string | null, reason: string | null, expiresAt: Date | null): Promise<void> {
    await db
      .insertInto('bans')
      .values({ community_id: communityId, pubkey, banned_by: bannedBy, reason, expires_at: expiresAt })
      .onConflict((oc) => oc.columns(['community_id', 'pubkey']).doUpdateSet({ reason, banned_by: bannedBy, expires_at: expiresAt }))
      .execute();
  }

  /** Lifts a ban that is in force; false when there was none. */
  async liftBan(db: Kysely<DB>, communityId: string, pubkey: string): Promise<boolean> {
    const rows = await db
      .deleteFrom('bans')
      .where('community_id', '=', communityId)
      .where('pubkey', '=', pubkey)
      .returning(sql<boolean>`(expires_at is null or expires_at > now())`.as('active'))
      .execute();
    return rows.some((r) => r.active);
  }

  async upsertTimeout(db: Kysely<DB>, communityId: string, pubkey: string, untilSecs: number, by: string | null, reason: string | null): Promise<void> {
    const until = new Date(untilSecs * 1000);
    await db
      .insertInto('timeouts')
      .values({ community_id: communityId, pubkey, until, timed_out_by: by, reason })
      .onConflict((oc) => oc.columns(['community_id', 'pubkey']).doUpdateSet({ until, timed_out_by: by, reason }))
      .execute();
  }

  /** Clears a timeout that is in force; false when there was none. */
  async clearTimeout(db: Kysely<DB>, communityId: string, pubkey: string): Promise<boolean> {
    const rows = await db
      .deleteFrom('timeouts')
      .where('community_id', '=', communityId)
      .where('pubkey', '=', pubkey)
      .returning(sql<boolean>`(until > now())`.as('active'))
      .execute();
    return rows.some((r) => r.active);
  }
}
