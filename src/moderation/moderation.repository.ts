/**
 * Moderation and membership state. Every read here gates access, so every
 * read is on the writer (relay.md §4.4): a stale replica must never readmit a
 * banned key.
 */
import { Injectable } from '@nestjs/common';
import { sql } from 'kysely';
import { CoalescingLoader } from '../common/coalescing-loader.js';
import { BOUNDED, DatabaseService, RoutedReader } from '@buzz-relay/read-path';

export type Restriction = { kind: 'none' } | { kind: 'banned' } | { kind: 'timed_out'; untilSecs: number };

/** A (community, pubkey) lookup; its coalescing key is `community:pubkey`. */
interface KeyLookup {
  readonly communityId: string;
  readonly pubkey: string;
}

/** Most keys one coalesced lookup statement reads (one primary-key probe each). */
export const LOOKUP_BATCH_MAX = 1000;
/** Most coalesced lookup statements of one kind in flight at once (writer connections they hold). */
export const LOOKUP_CONCURRENCY = 2;

const keyOf = (l: KeyLookup) => `${l.communityId}:${l.pubkey}`;

@Injectable()
export class ModerationRepository {
  /**
   * Ban and timeout state, read on the writer every time, never cached: concurrent lookups of
   * one key share one query, and lookups of different keys made together (or while the previous
   * statements run) share one statement, so a burst of AUTHs or EVENTs costs a few round trips
   * instead of one writer connection per lookup.
   */
  private readonly restrictions = new CoalescingLoader<KeyLookup, Restriction>({
    keyOf,
    maxBatch: LOOKUP_BATCH_MAX,
    maxConcurrent: LOOKUP_CONCURRENCY,
    load: (batch) => this.readRestrictions(batch),
  });
  private readonly relayMembers = new CoalescingLoader<KeyLookup, boolean>({
    keyOf,
    maxBatch: LOOKUP_BATCH_MAX,
    maxConcurrent: LOOKUP_CONCURRENCY,
    load: (batch) => this.readRelayMembers(batch),
  });
  private readonly allowlisted = new CoalescingLoader<KeyLookup, boolean>({
    keyOf,
    maxBatch: LOOKUP_BATCH_MAX,
    maxConcurrent: LOOKUP_CONCURRENCY,
    load: (batch) => this.readAllowlisted(batch),
  });

  constructor(
    private readonly db: DatabaseService,
    private readonly routed: RoutedReader,
  ) {}

  /**
   * The key's restriction. A caller may share a statement that started before it asked (at most
   * that statement's running time old); `fresh` waits for one that starts after, so it sees
   * every ban committed before the call (the immediate ban hook needs that).
   */
  restrictionOf(communityId: string, pubkey: string, opts: { fresh?: boolean } = {}): Promise<Restriction> {
    return this.restrictions.get({ communityId, pubkey }, opts);
  }

  private async readRestrictions(batch: readonly KeyLookup[]): Promise<Map<string, Restriction>> {
    const { rows } = await this.routed.internalReadOnWriter('authentication', (db) => sql<{ community_id: string; pubkey: string; banned: boolean; until: string | null }>`
      select q.community_id, q.pubkey,
             exists (select 1 from bans b where b.community_id = q.community_id and b.pubkey = q.pubkey
                       and (b.expires_at is null or b.expires_at > now())) as banned,
             (select extract(epoch from max(t.until))::bigint from timeouts t
               where t.community_id = q.community_id and t.pubkey = q.pubkey and t.until > now()) as until
        from unnest(${batch.map((b) => b.communityId)}::uuid[], ${batch.map((b) => b.pubkey)}::text[]) as q(community_id, pubkey)`.execute(db));
    const byKey = new Map(rows.map((r) => [`${r.community_id}:${r.pubkey}`, r]));
    return new Map(
      batch.map((b): [string, Restriction] => {
        const r = byKey.get(keyOf(b));
        if (r?.banned) return [keyOf(b), { kind: 'banned' }];
        if (r?.until != null) return [keyOf(b), { kind: 'timed_out', untilSecs: Number(r.until) }];
        return [keyOf(b), { kind: 'none' }];
      }),
    );
  }

  /**
   * The subset of (community, pubkey) pairs under a ban now, as `community:pubkey` keys: the
   * periodic re-check of connected keys (BanEnforcer). One statement for the whole list, one
   * primary-key probe per pair; callers bound the list's length.
   */
  async bannedAmong(pairs: ReadonlyArray<{ readonly communityId: string; readonly pubkey: string }>): Promise<Set<string>> {
    if (pairs.length === 0) return new Set();
    const { rows } = await this.routed.internalReadOnWriter('authorization', (db) => sql<{ community_id: string; pubkey: string }>`
      select b.community_id, b.pubkey
        from unnest(${pairs.map((p) => p.communityId)}::uuid[], ${pairs.map((p) => p.pubkey)}::text[]) as q(community_id, pubkey)
        join bans b on b.community_id = q.community_id and b.pubkey = q.pubkey
       where b.expires_at is null or b.expires_at > now()`.execute(db));
    return new Set(rows.map((r) => `${r.community_id}:${r.pubkey}`));
  }

  /**
   * The bans in force now among (community, pubkey) pairs: `community:pubkey` → when the ban ends,
   * in epoch milliseconds (Infinity: no expiry); pairs not banned are absent. One statement, one
   * primary-key probe per pair (BanGate's cached read path; callers bound the list).
   */
  async banExpiries(pairs: ReadonlyArray<{ readonly communityId: string; readonly pubkey: string }>): Promise<Map<string, number>> {
    if (pairs.length === 0) return new Map();
    const { rows } = await this.routed.internalReadOnWriter('authorization', (db) => sql<{ community_id: string; pubkey: string; until_ms: string | null }>`
      select b.community_id, b.pubkey, (extract(epoch from b.expires_at) * 1000)::bigint as until_ms
        from unnest(${pairs.map((p) => p.communityId)}::uuid[], ${pairs.map((p) => p.pubkey)}::text[]) as q(community_id, pubkey)
        join bans b on b.community_id = q.community_id and b.pubkey = q.pubkey
       where b.expires_at is null or b.expires_at > now()`.execute(db));
    return new Map(rows.map((r) => [`${r.community_id}:${r.pubkey}`, r.until_ms === null ? Infinity : Number(r.until_ms)]));
  }

  /** Coalesced like restrictionOf (never cached). */
  isAllowlisted(communityId: string, pubkey: string): Promise<boolean> {
    return this.allowlisted.get({ communityId, pubkey });
  }

  /**
   * The one routed permission read (relay.md §4.4): bounded-stale on the replica
   * when a read budget is set, the writer otherwise; an authorization read, so it
   * is never capped or shed and always keeps its writer fallback. Coalesced like
   * restrictionOf (one routed read answers a batch of keys), never cached.
   */
  isRelayMember(communityId: string, pubkey: string): Promise<boolean> {
    return this.relayMembers.get({ communityId, pubkey });
  }

  private async readAllowlisted(batch: readonly KeyLookup[]): Promise<Map<string, boolean>> {
    const { rows } = await this.routed.internalReadOnWriter('authentication', (db) => sql<{ community_id: string; pubkey: string }>`
      select a.community_id, a.pubkey
        from unnest(${batch.map((b) => b.communityId)}::uuid[], ${batch.map((b) => b.pubkey)}::text[]) as q(community_id, pubkey)
        join pubkey_allowlist a on a.community_id = q.community_id and a.pubkey = q.pubkey`.execute(db));
    return presence(batch, rows);
  }

  private async readRelayMembers(batch: readonly KeyLookup[]): Promise<Map<string, boolean>> {
    const { rows } = await this.routed.read({ path: 'relay_membership', predicate: BOUNDED, operation: 'authorization', span: 'is_relay_member' }, (db) => sql<{ community_id: string; pubkey: string }>`
      select m.community_id, m.pubkey
        from unnest(${batch.map((b) => b.communityId)}::uuid[], ${batch.map((b) => b.pubkey)}::text[]) as q(community_id, pubkey)
        join relay_members m on m.community_id = q.community_id and m.pubkey = q.pubkey`.execute(db));
    return presence(batch, rows);
  }

  /**
   * Records the NIP-OA owner an AUTH proved for an agent (relay.md §2.5 step 5). First write
   * wins: a later proof naming another owner leaves the row alone. True when this call wrote it.
   */
  async recordAgentOwner(communityId: string, agentPubkey: string, ownerPubkey: string): Promise<boolean> {
    const row = await this.routed.internalReadOnWriter('authentication', (db) =>
      db
        .insertInto('agent_owners')
        .values({ community_id: communityId, agent_pubkey: agentPubkey, owner_pubkey: ownerPubkey })
        .onConflict((oc) => oc.columns(['community_id', 'agent_pubkey']).doNothing())
        .returning('agent_pubkey')
        .executeTakeFirst(),
    );
    return row !== undefined;
  }

  async addRelayMember(communityId: string, pubkey: string, role: 'owner' | 'admin' | 'member', addedBy: string | null): Promise<void> {
    await this.db.withWriter('event_write', (db) =>
      db
        .insertInto('relay_members')
        .values({ community_id: communityId, pubkey, role, added_by: addedBy })
        .onConflict((oc) => oc.columns(['community_id', 'pubkey']).doUpdateSet({ role }))
        .execute(),
    );
  }
}

/** Each key of the batch: whether its row came back. */
function presence(batch: readonly KeyLookup[], rows: ReadonlyArray<{ community_id: string; pubkey: string }>): Map<string, boolean> {
  const found = new Set(rows.map((r) => `${r.community_id}:${r.pubkey}`));
  return new Map(batch.map((b) => [keyOf(b), found.has(keyOf(b))]));
}
