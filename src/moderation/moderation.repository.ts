/**
 * Moderation and membership state. Every read here gates access, so every
 * read is on the writer (relay.md §4.4): a stale replica must never readmit a
 * banned key.
 */
import { Injectable } from '@nestjs/common';
import { sql } from 'kysely';
import { DatabaseService } from '../database/database.service.js';
import { BOUNDED } from '../routing/route-predicate.js';
import { RoutedReader } from '../routing/routed-reader.service.js';

export type Restriction = { kind: 'none' } | { kind: 'banned' } | { kind: 'timed_out'; untilSecs: number };

interface PendingLookup {
  readonly communityId: string;
  readonly pubkey: string;
  resolve(r: Restriction): void;
  reject(err: unknown): void;
}

@Injectable()
export class ModerationRepository {
  private pending: PendingLookup[] = [];

  constructor(
    private readonly db: DatabaseService,
    private readonly routed: RoutedReader,
  ) {}

  /**
   * The author's restriction, read on the writer every time (never cached). Lookups
   * made in the same turn of the event loop share one query, so a burst of EVENTs
   * costs one round trip instead of one per event.
   */
  restrictionOf(communityId: string, pubkey: string): Promise<Restriction> {
    return new Promise((resolve, reject) => {
      if (this.pending.push({ communityId, pubkey, resolve, reject }) === 1) setImmediate(() => void this.flushLookups());
    });
  }

  private async flushLookups(): Promise<void> {
    const batch = this.pending;
    this.pending = [];
    try {
      const { rows } = await this.routed.onWriter('authentication', (db) => sql<{ community_id: string; pubkey: string; banned: boolean; until: string | null }>`
        select q.community_id, q.pubkey,
               exists (select 1 from bans b where b.community_id = q.community_id and b.pubkey = q.pubkey
                         and (b.expires_at is null or b.expires_at > now())) as banned,
               (select extract(epoch from max(t.until))::bigint from timeouts t
                 where t.community_id = q.community_id and t.pubkey = q.pubkey and t.until > now()) as until
          from unnest(${batch.map((b) => b.communityId)}::uuid[], ${batch.map((b) => b.pubkey)}::text[]) as q(community_id, pubkey)`.execute(db));
      const byKey = new Map(rows.map((r) => [`${r.community_id}:${r.pubkey}`, r]));
      for (const p of batch) {
        const r = byKey.get(`${p.communityId}:${p.pubkey}`);
        if (r?.banned) p.resolve({ kind: 'banned' });
        else if (r?.until != null) p.resolve({ kind: 'timed_out', untilSecs: Number(r.until) });
        else p.resolve({ kind: 'none' });
      }
    } catch (err) {
      for (const p of batch) p.reject(err);
    }
  }

  /**
   * The subset of (community, pubkey) pairs under a ban now, as `community:pubkey` keys: the
   * periodic re-check of connected keys (BanEnforcer). One statement for the whole list, one
   * primary-key probe per pair; callers bound the list's length.
   */
  async bannedAmong(pairs: ReadonlyArray<{ readonly communityId: string; readonly pubkey: string }>): Promise<Set<string>> {
    if (pairs.length === 0) return new Set();
    const { rows } = await this.routed.onWriter('authorization', (db) => sql<{ community_id: string; pubkey: string }>`
      select b.community_id, b.pubkey
        from unnest(${pairs.map((p) => p.communityId)}::uuid[], ${pairs.map((p) => p.pubkey)}::text[]) as q(community_id, pubkey)
        join bans b on b.community_id = q.community_id and b.pubkey = q.pubkey
       where b.expires_at is null or b.expires_at > now()`.execute(db));
    return new Set(rows.map((r) => `${r.community_id}:${r.pubkey}`));
  }

  async isAllowlisted(communityId: string, pubkey: string): Promise<boolean> {
    const row = await this.routed.onWriter('authentication', (db) =>
      db.selectFrom('pubkey_allowlist').select('pubkey').where('community_id', '=', communityId).where('pubkey', '=', pubkey).executeTakeFirst(),
    );
    return row !== undefined;
  }

  /**
   * The one routed permission read (relay.md §4.4): bounded-stale on the replica
   * when a read budget is set, the writer otherwise; an authorization read, so it
   * is never capped or shed and always keeps its writer fallback.
   */
  async isRelayMember(communityId: string, pubkey: string): Promise<boolean> {
    const row = await this.routed.read({ path: 'relay_membership', predicate: BOUNDED, operation: 'authorization', span: 'is_relay_member' }, (db) =>
      db.selectFrom('relay_members').select('pubkey').where('community_id', '=', communityId).where('pubkey', '=', pubkey).executeTakeFirst(),
    );
    return row !== undefined;
  }

  /**
   * Records the NIP-OA owner an AUTH proved for an agent (relay.md §2.5 step 5). First write
   * wins: a later proof naming another owner leaves the row alone. True when this call wrote it.
   */
  async recordAgentOwner(communityId: string, agentPubkey: string, ownerPubkey: string): Promise<boolean> {
    const row = await this.routed.onWriter('authentication', (db) =>
      db
        .insertInto('agent_owners')
        .values({ community_id: communityId, agent_pubkey: agentPubkey, owner_pubkey: ownerPubkey })
        .onConflict((oc) => oc.columns(['community_id', 'agent_pubkey']).doNothing())
        .returning('agent_pubkey')
        .executeTakeFirst(),
    );
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
