/**
 * Moderation and membership state. Every read here gates access, so every
 * read is on the writer (relay.md §4.4): a stale replica must never readmit a
 * banned key.
 */
import { Injectable } from '@nestjs/common';
import { sql } from 'kysely';
import { DatabaseService } from '../database/database.service.js';

export type Restriction = { kind: 'none' } | { kind: 'banned' } | { kind: 'timed_out'; untilSecs: number };

@Injectable()
export class ModerationRepository {
  constructor(private readonly db: DatabaseService) {}

  async restrictionOf(communityId: string, pubkey: string): Promise<Restriction> {
    const { rows } = await sql<{ banned: boolean; until: string | null }>`
      select exists (select 1 from bans b where b.community_id = ${communityId}::uuid and b.pubkey = ${pubkey}
                       and (b.expires_at is null or b.expires_at > now())) as banned,
             (select extract(epoch from max(t.until))::bigint from timeouts t
               where t.community_id = ${communityId}::uuid and t.pubkey = ${pubkey} and t.until > now()) as until`.execute(this.db.writer);
    const r = rows[0];
    if (r.banned) return { kind: 'banned' };
    if (r.until !== null) return { kind: 'timed_out', untilSecs: Number(r.until) };
    return { kind: 'none' };
  }

  async isAllowlisted(communityId: string, pubkey: string): Promise<boolean> {
    const row = await this.db.writer
      .selectFrom('pubkey_allowlist')
      .select('pubkey')
      .where('community_id', '=', communityId)
      .where('pubkey', '=', pubkey)
      .executeTakeFirst();
    return row !== undefined;
  }

  async isRelayMember(communityId: string, pubkey: string): Promise<boolean> {
    const row = await this.db.writer
      .selectFrom('relay_members')
      .select('pubkey')
      .where('community_id', '=', communityId)
      .where('pubkey', '=', pubkey)
      .executeTakeFirst();
    return row !== undefined;
  }

  async ban(communityId: string, pubkey: string, bannedBy: string | null, reason: string | null): Promise<void> {
    await this.db.writer
      .insertInto('bans')
      .values({ community_id: communityId, pubkey, banned_by: bannedBy, reason })
      .onConflict((oc) => oc.columns(['community_id', 'pubkey']).doUpdateSet({ reason, banned_by: bannedBy, expires_at: null }))
      .execute();
  }

  async addRelayMember(communityId: string, pubkey: string, role: 'owner' | 'admin' | 'member', addedBy: string | null): Promise<void> {
    await this.db.writer
      .insertInto('relay_members')
      .values({ community_id: communityId, pubkey, role, added_by: addedBy })
      .onConflict((oc) => oc.columns(['community_id', 'pubkey']).doUpdateSet({ role }))
      .execute();
  }
}
