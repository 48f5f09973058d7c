/**
 * Channels (NIP-29 groups) and their members. Reads gate access and writes
 * run inside ingest transactions, so everything here uses the writer.
 */
import { Injectable, Optional } from '@nestjs/common';
import { Kysely, RawBuilder, sql } from 'kysely';
import { ChannelMemberRole, ChannelType, ChannelVisibility, DatabaseMetrics, DB, RoutedReader } from '@buzz-relay/read-path';

/** A (community, pubkey) access lookup; its key is `community:pubkey`. */
export interface AccessKey {
  readonly communityId: string;
  readonly pubkey: string;
}

export const accessKey = (k: AccessKey): string => `${k.communityId}:${k.pubkey}`;

export interface ChannelInfo {
  readonly id: string;
  readonly visibility: ChannelVisibility;
  readonly archived: boolean;
}

export interface ChannelDetails {
  readonly id: string;
  /** The group id clients name it by: the one it was created with, or its id. */
  readonly groupId: string;
  readonly name: string;
  readonly about: string | null;
  readonly visibility: ChannelVisibility;
  readonly channelType: ChannelType;
  readonly archived: boolean;
}

export interface NewChannel {
  readonly id: string;
  /** The NIP-29 group id it is created with when that is not `id` (group-id.ts). */
  readonly groupId?: string;
  readonly name: string;
  readonly about: string | null;
  readonly visibility: ChannelVisibility;
  readonly channelType: ChannelType;
  readonly createdBy: string;
}

@Injectable()
export class ChannelRepository {
  constructor(
    private readonly routed: RoutedReader,
    @Optional() private readonly metrics?: DatabaseMetrics,
  ) {}

  /** Inside a caller's transaction, or a labelled writer checkout: access reads never touch the replica. */
  private on<T>(tx: Kysely<DB> | undefined, work: (db: Kysely<DB>) => Promise<T>): Promise<T> {
    return tx ? work(tx) : this.routed.internalReadOnWriter('authorization', work);
  }

  async find(communityId: string, channelId: string, tx?: Kysely<DB>): Promise<ChannelInfo | undefined> {
    const row = await this.on(tx, (db) => db
      .selectFrom('channels')
      .select(['id', 'visibility', sql<boolean>`archived_at is not null`.as('archived')])
      .where('community_id', '=', communityId)
      .where('id', '=', channelId)
      .where('deleted_at', 'is', null)
      .executeTakeFirst());
    return row ? { id: row.id, visibility: row.visibility, archived: row.archived } : undefined;
  }

  /**
   * For each (community, pubkey): the open channels plus the private ones it is a current member
   * of, in one statement for the whole batch. The open channels are read once per community, not
   * once per pubkey (in a reconnect storm every pubkey asks for the same community's); the private
   * ones come from idx_channel_members_pubkey, one range per pubkey.
   */
  async accessibleIdsAmong(pairs: readonly AccessKey[]): Promise<Map<string, string[]>> {
    const out = new Map<string, string[]>(pairs.map((p) => [accessKey(p), []]));
    if (pairs.length === 0) return out;
    const { rows } = await this.on(undefined, (db) => sql<{ community_id: string; pubkey: string | null; id: string }>`
      with q as (select * from unnest(${pairs.map((p) => p.communityId)}::uuid[], ${pairs.map((p) => p.pubkey)}::text[]) as q(community_id, pubkey))
      select c.community_id, null::text as pubkey, c.id from channels c
       where c.community_id in (select community_id from q) and c.deleted_at is null and c.visibility = 'open'
      union all
      select c.community_id, q.pubkey, c.id from q
        join channel_members m on m.community_id = q.community_id and m.pubkey = q.pubkey and m.removed_at is null
        join channels c on c.community_id = m.community_id and c.id = m.channel_id and c.deleted_at is null and c.visibility <> 'open'`.execute(db));
    const open = new Map<string, string[]>();
    for (const r of rows) {
      if (r.pubkey === null) open.set(r.community_id, [...(open.get(r.community_id) ?? []), r.id]);
      else out.get(`${r.community_id}:${r.pubkey}`)?.push(r.id);
    }
    for (const p of pairs) out.get(accessKey(p))!.unshift(...(open.get(p.communityId) ?? []));
    return out;
  }

  /**
   * Of (community, pubkey, channel) triples, the `community:pubkey:channel` keys the pubkey may
   * read now (a live channel, open or it is a current member): the uncached confirmation of a
   * cache miss, for a whole batch in one statement. Channel ids must be UUIDs.
   */
  async readableTriples(triples: ReadonlyArray<AccessKey & { readonly channelId: string }>): Promise<Set<string>> {
    if (triples.length === 0) return new Set();
    const { rows } = await this.on(undefined, (db) => sql<{ community_id: string; pubkey: string; id: string }>`
      select c.community_id, q.pubkey, c.id
        from unnest(${triples.map((t) => t.communityId)}::uuid[], ${triples.map((t) => t.pubkey)}::text[], ${triples.map((t) => t.channelId)}::uuid[]) as q(community_id, pubkey, channel_id)
        join channels c on c.community_id = q.community_id and c.id = q.channel_id and c.deleted_at is null
       where ${readableBy(sql.ref('q.pubkey'))}`.execute(db));
    return new Set(rows.map((r) => `${r.community_id}:${r.pubkey}:${r.id}`));
  }

  /** Of `channelIds`, the live ones the pubkey may read now (open, or a current member), on `db` (a writer handle). */
  async readableAmong(db: Kysely<DB>, communityId: string, pubkey: string, channelIds: readonly string[]): Promise<string[]> {
    if (channelIds.length === 0) return [];
    const { rows } = await sql<{ id: string }>`
      select c.id from channels c
       where c.community_id = ${communityId}::uuid and c.id = any(${channelIds as string[]}::uuid[])
         and c.deleted_at is null and ${readableBy(pubkey)}`.execute(db);
    return rows.map((r) => r.id);
  }

  async memberRole(communityId: string, channelId: string, pubkey: string, tx?: Kysely<DB>): Promise<ChannelMemberRole | undefined> {
    const row = await this.on(tx, (db) => db
      .selectFrom('channel_members')
      .select('role')
      .where('community_id', '=', communityId)
      .where('channel_id', '=', channelId)
      .where('pubkey', '=', pubkey)
      .where('removed_at', 'is', null)
      .executeTakeFirst());
    return row?.role;
  }

  /** The current roles of the channel's owners and of `pubkeys`, in one statement, as `pubkey → role`. */
  async ownersAnd(tx: Kysely<DB>, communityId: string, channelId: string, pubkeys: readonly string[]): Promise<Map<string, ChannelMemberRole>> {
    const rows = await tx
      .selectFrom('channel_members')
      .select(['pubkey', 'role'])
      .where('community_id', '=', communityId)
      .where('channel_id', '=', channelId)
      .where('removed_at', 'is', null)
      .where((eb) => (pubkeys.length === 0 ? eb('role', '=', 'owner') : eb.or([eb('role', '=', 'owner'), eb('pubkey', 'in', pubkeys)])))
      .execute();
    return new Map(rows.map((r) => [r.pubkey, r.role]));
  }

  /** Creates the channel; false when the id is already taken. */
  async create(tx: Kysely<DB>, communityId: string, ch: NewChannel): Promise<boolean> {
    const inserted = await tx
      .insertInto('channels')
      .values({
        community_id: communityId,
        id: ch.id,
        name: ch.name,
        about: ch.about,
        visibility: ch.visibility,
        channel_type: ch.channelType,
        created_by: ch.createdBy,
        group_id: ch.groupId ?? null,
      })
      .onConflict((oc) => oc.columns(['community_id', 'id']).doNothing())
      .returning('id')
      .executeTakeFirst();
    return inserted !== undefined;
  }

  async upsertMember(tx: Kysely<DB>, communityId: string, channelId: string, pubkey: string, role: ChannelMemberRole): Promise<void> {
    await tx
      .insertInto('channel_members')
      .values({ community_id: communityId, channel_id: channelId, pubkey, role })
      .onConflict((oc) => oc.columns(['community_id', 'channel_id', 'pubkey']).doUpdateSet({ role, removed_at: null, joined_at: sql`now()` }))
      .execute();
  }

  async removeMember(tx: Kysely<DB>, communityId: string, channelId: string, pubkey: string): Promise<void> {
    await tx
      .updateTable('channel_members')
      .set({ removed_at: sql`now()` })
      .where('community_id', '=', communityId)
      .where('channel_id', '=', channelId)
      .where('pubkey', '=', pubkey)
      .where('removed_at', 'is', null)
      .execute();
  }

  async updateMetadata(tx: Kysely<DB>, communityId: string, channelId: string, patch: { name?: string; about?: string; visibility?: ChannelVisibility; archived?: boolean }): Promise<void> {
    const set: Record<string, unknown> = {};
    if (patch.name !== undefined) set.name = patch.name;
    if (patch.about !== undefined) set.about = patch.about;
    if (patch.visibility !== undefined) set.visibility = patch.visibility;
    if (patch.archived !== undefined) set.archived_at = patch.archived ? sql`now()` : null;
    if (Object.keys(set).length === 0) return;
    await tx.updateTable('channels').set(set).where('community_id', '=', communityId).where('id', '=', channelId).execute();
  }

  async softDelete(tx: Kysely<DB>, communityId: string, channelId: string): Promise<void> {
    await tx.updateTable('channels').set({ deleted_at: sql`now()` }).where('community_id', '=', communityId).where('id', '=', channelId).execute();
  }

  /** Serialises invite creation per channel, so the open-invite bound holds under concurrency. */
  async lockInvites(tx: Kysely<DB>, communityId: string, channelId: string): Promise<void> {
    await this.membershipLock(tx, `nip29-invites:${communityId}:${channelId}`);
  }

  /** Unspent, unexpired invite codes of a channel. */
  async openInviteCount(tx: Kysely<DB>, communityId: string, channelId: string): Promise<number> {
    const { rows } = await sql<{ n: number }>`
      select count(*)::int as n from channel_invites
       where community_id = ${communityId}::uuid and channel_id = ${channelId}::uuid and used_at is null and expires_at > now()`.execute(tx);
    return rows[0].n;
  }

  /**
   * Records the codes of one 9009; false (nothing recorded) when any code is already taken in the
   * channel by a code that is still open. A spent or expired code may be minted again.
   */
  async createInvites(tx: Kysely<DB>, communityId: string, channelId: string, inv: { codes: readonly string[]; createdBy: string; eventId: string; expiresAtSecs: number }): Promise<boolean> {
    const { rows } = await sql<{ code: string }>`
      insert into channel_invites (community_id, channel_id, code, created_by, event_id, expires_at)
      select ${communityId}::uuid, ${channelId}::uuid, c, ${inv.createdBy}, decode(${inv.eventId}, 'hex'), to_timestamp(${inv.expiresAtSecs})
        from unnest(${inv.codes as string[]}::text[]) as c
      on conflict (community_id, channel_id, code) do update
         set created_by = excluded.created_by, event_id = excluded.event_id, created_at = now(),
             expires_at = excluded.expires_at, used_by = null, used_at = null
       where channel_invites.used_at is not null or channel_invites.expires_at <= now()
      returning code`.execute(tx);
    return rows.length === inv.codes.length;
  }

  /** Spends an open invite code for `pubkey`: true when the code admitted them (each code admits once). */
  async spendInvite(tx: Kysely<DB>, communityId: string, channelId: string, code: string, pubkey: string): Promise<boolean> {
    const res = await tx
      .updateTable('channel_invites')
      .set({ used_by: pubkey, used_at: sql`now()` })
      .where('community_id', '=', communityId)
      .where('channel_id', '=', channelId)
      .where('code', '=', code)
      .where('used_at', 'is', null)
      .where('expires_at', '>', sql<Date>`now()`)
      .executeTakeFirst();
    return Number(res.numUpdatedRows) === 1;
  }

  /**
   * NIP-29 9005: soft-deletes one event of the channel, or the versions of one addressable
   * coordinate of the channel up to `until`. Returns the hex ids it deleted.
   */
  async softDeleteInChannel(
    tx: Kysely<DB>,
    communityId: string,
    channelId: string,
    target: { id: string } | { coordinate: { kind: number; pubkey: string; d: string }; until: number },
  ): Promise<string[]> {
    const match =
      'id' in target
        ? sql`id = decode(${target.id}, 'hex')`
        : sql`pubkey = decode(${target.coordinate.pubkey}, 'hex') and kind = ${target.coordinate.kind} and d_tag = ${target.coordinate.d} and created_at <= to_timestamp(${target.until})`;
    const { rows } = await sql<{ id: Buffer }>`
      update events set deleted_at = now()
       where community_id = ${communityId}::uuid and channel_id = ${channelId}::uuid and ${match} and deleted_at is null
      returning id`.execute(tx);
    return rows.map((r) => r.id.toString('hex'));
  }

  /** What the NIP-29 metadata event (39000) publishes about a live channel. */
  async details(tx: Kysely<DB>, communityId: string, channelId: string): Promise<ChannelDetails | undefined> {
    const row = await tx
      .selectFrom('channels')
      .select(['id', 'group_id', 'name', 'about', 'visibility', 'channel_type', sql<boolean>`archived_at is not null`.as('archived')])
      .where('community_id', '=', communityId)
      .where('id', '=', channelId)
      .where('deleted_at', 'is', null)
      .executeTakeFirst();
    return row ? { id: row.id, groupId: row.group_id ?? row.id, name: row.name, about: row.about, visibility: row.visibility, channelType: row.channel_type, archived: row.archived } : undefined;
  }

  /** Current members, oldest first (a stable order for the 39001/39002 lists). */
  async members(tx: Kysely<DB>, communityId: string, channelId: string): Promise<Array<{ pubkey: string; role: ChannelMemberRole }>> {
    return tx
      .selectFrom('channel_members')
      .select(['pubkey', 'role'])
      .where('community_id', '=', communityId)
      .where('channel_id', '=', channelId)
      .where('removed_at', 'is', null)
      .orderBy('joined_at')
      .orderBy('pubkey')
      .execute();
  }

  /**
   * Serialises the group-state refreshes of one channel until the transaction ends, so the
   * refresh that locks last reads every membership change committed before it.
   */
  async lockGroupState(tx: Kysely<DB>, communityId: string, channelId: string): Promise<void> {
    await this.membershipLock(tx, `nip29-state:${communityId}:${channelId}`);
  }

  /** A transaction-scoped advisory lock on `key`, recorded as `lock_type="membership"` (database.md §6.3). */
  private async membershipLock(tx: Kysely<DB>, key: string): Promise<void> {
    const take = () => sql`select pg_advisory_xact_lock(hashtextextended(${key}, 0))`.execute(tx);
    await (this.metrics ? this.metrics.advisoryLock('membership', take) : take());
  }

  /** The group id a channel is named by (ChannelDetails.groupId), deleted or not; undefined for no such channel. */
  async groupIdOf(tx: Kysely<DB>, communityId: string, channelId: string): Promise<string | undefined> {
    const row = await tx.selectFrom('channels').select(['id', 'group_id']).where('community_id', '=', communityId).where('id', '=', channelId).executeTakeFirst();
    return row ? (row.group_id ?? row.id) : undefined;
  }

  /** Newest created_at (epoch seconds) of the live relay-signed state events of a group (by its `d`), if any. */
  async latestStateAt(tx: Kysely<DB>, communityId: string, groupId: string, relayPubkey: string, kinds: readonly number[]): Promise<number | undefined> {
    const { rows } = await sql<{ at: string | null }>`
      select extract(epoch from max(created_at))::bigint as at from events
       where community_id = ${communityId}::uuid and pubkey = decode(${relayPubkey}, 'hex')
         and kind = any(${kinds as number[]}::int[]) and d_tag = ${groupId} and deleted_at is null`.execute(tx);
    return rows[0]?.at == null ? undefined : Number(rows[0].at);
  }

  /**
   * Soft-deletes the live versions of the relay's state events of a group (by its `d`): before a refresh
   * inserts the new versions, and for good when the group is deleted. Keyed by the relay's
   * current pubkey (the addressable coordinate, and what idx_events_parameterized serves).
   */
  async supersedeState(tx: Kysely<DB>, communityId: string, groupId: string, relayPubkey: string, kinds: readonly number[]): Promise<void> {
    await sql`
      update events set deleted_at = now()
       where community_id = ${communityId}::uuid and pubkey = decode(${relayPubkey}, 'hex')
         and kind = any(${kinds as number[]}::int[]) and d_tag = ${groupId} and deleted_at is null`.execute(tx);
  }
}

/** A channel row `c` the pubkey may read: open, or it is a current member. */
function readableBy(pubkey: string | RawBuilder<unknown>) {
  return sql<boolean>`(c.visibility = 'open' or exists (
    select 1 from channel_members m
     where m.community_id = c.community_id and m.channel_id = c.id and m.pubkey = ${pubkey} and m.removed_at is null))`;
}
