/**
 * Every SQL statement of the write path. Methods take the transaction they run
 * in; the caller (EventWriter) decides how transactions are grouped.
 */
import { Injectable, Optional } from '@nestjs/common';
import { Kysely, sql, Transaction } from 'kysely';
import { isHex64 } from '../nostr/hex.js';
import { REPLICA_FLOOR_LOCK_KEY } from '@buzz-relay/read-path/internal';
import { DatabaseMetrics, DB } from '@buzz-relay/read-path';
import type { AdvisoryLockType } from '@buzz-relay/read-path/internal';
import type { KindTarget } from './kind-validators.js';
import { StoredEventInput, ThreadAnchor } from './stored-event.js';

type Tx = Transaction<DB> | Kysely<DB>;

/**
 * The ids an event references the way `tags @> '[["e","<id>"]]'` does: every 64-lowercase-hex
 * element of any tag that holds "e" at any position (migration 0016's SQL applies the same rule).
 */
export function eTagRefsOf(tags: readonly (readonly string[])[]): string[] {
  const out = new Set<string>();
  for (const tag of tags) {
    if (!tag.includes('e')) continue;
    for (const value of tag) if (isHex64(value)) out.add(value);
  }
  return [...out];
}

/** Whether an item gets a `thread_metadata` row (applyThreads): a placed message in a channel. */
function placedInThread(i: StoredEventInput): boolean {
  return Boolean(i.thread && i.channelId);
}

/**
 * Whether an item needs nothing but its `events` row: no thread row, no mentions, no e-tag refs
 * (applyThreads, insertMentions and insertRefs would each write nothing for it).
 */
export function eventRowOnly(i: StoredEventInput): boolean {
  return !placedInThread(i) && i.mentions.length === 0 && eTagRefsOf(i.event.tags).length === 0;
}

/** The replica-floor lock taken shared (database.md §1.7), as one SQL expression. */
const FLOOR_LOCK_SHARED = sql`pg_advisory_xact_lock_shared(${REPLICA_FLOOR_LOCK_KEY}::bigint)`;

export interface ParentThreadRow {
  event_id: Buffer;
  event_created_at: string;
  /** The parent's author, hex. */
  pubkey: string;
  channel_id: string;
  depth: number;
  root_event_id: Buffer | null;
  root_event_created_at: string | null;
}

@Injectable()
export class EventWriteRepository {
  /** Metrics are optional so tooling (benchmarks, plan tests) can use the SQL alone. */
  constructor(@Optional() private readonly metrics?: DatabaseMetrics) {}

  /**
   * Channel-event writes take the replica-floor lock shared, so a fence probe
   * cannot sample the writer clock while one of them is in flight.
   */
  async lockFloorShared(tx: Tx): Promise<void> {
    await sql`select ${FLOOR_LOCK_SHARED}`.execute(tx);
  }

  /**
   * One multi-row insert; returns the hex ids that were new (duplicates are skipped). With
   * `lockFloor` the same statement first takes the floor lock shared: every row the insert gets
   * comes through the join with the `floor` CTE, whose one row exists only once the lock is
   * granted, so no row is inserted before it (the CTE is materialized: it runs once).
   */
  async insertEvents(tx: Tx, communityId: string, items: readonly StoredEventInput[], { lockFloor = false } = {}): Promise<Set<string>> {
    if (items.length === 0) return new Set();
    const col = <T>(f: (i: StoredEventInput) => T): T[] => items.map(f);
    // One bound array per column keeps the statement text constant for any batch size.
    const { rows } = await sql<{ id: Buffer }>`
      ${lockFloor ? sql`with floor as materialized (select ${FLOOR_LOCK_SHARED})` : sql``}
      insert into events (community_id, id, pubkey, created_at, kind, tags, content, sig, channel_id, d_tag)
      select ${communityId}::uuid, decode(u.id, 'hex'), decode(u.pubkey, 'hex'), to_timestamp(u.created_at),
             u.kind, u.tags::jsonb, u.content, decode(u.sig, 'hex'), u.channel_id, u.d_tag
        from unnest(${col((i) => i.event.id)}::text[], ${col((i) => i.event.pubkey)}::text[],
                    ${col((i) => i.event.created_at)}::bigint[], ${col((i) => i.event.kind)}::int[],
                    ${col((i) => JSON.stringify(i.event.tags))}::text[], ${col((i) => i.event.content)}::text[],
                    ${col((i) => i.event.sig)}::text[], ${col((i) => i.channelId)}::uuid[], ${col((i) => i.dTag)}::text[])
             as u(id, pubkey, created_at, kind, tags, content, sig, channel_id, d_tag)
             ${lockFloor ? sql`cross join floor` : sql``}
      on conflict do nothing
      returning id`.execute(tx);
    return new Set(rows.map((r) => r.id.toString('hex')));
  }

  async insertMentions(tx: Tx, communityId: string, items: readonly StoredEventInput[]): Promise<void> {
    const rows = items.flatMap((i) => i.mentions.map((p) => ({ i, p })));
    if (rows.length === 0) return;
    await sql`
      insert into event_mentions (community_id, pubkey_hex, event_id, event_created_at, channel_id, event_kind)
      select ${communityId}::uuid, u.p, decode(u.id, 'hex'), to_timestamp(u.created_at), u.channel_id, u.kind
        from unnest(${rows.map((r) => r.p)}::text[], ${rows.map((r) => r.i.event.id)}::text[],
                    ${rows.map((r) => r.i.event.created_at)}::bigint[], ${rows.map((r) => r.i.channelId)}::uuid[],
                    ${rows.map((r) => r.i.event.kind)}::int[]) as u(p, id, created_at, channel_id, kind)
      on conflict do nothing`.execute(tx);
  }

  /**
   * The `event_refs` rows of new events (migration 0016): one set-based insert per batch, in the
   * batch's transaction, so a committed event is never missing from e-tag reads.
   */
  async insertRefs(tx: Tx, communityId: string, items: readonly StoredEventInput[]): Promise<void> {
    const rows = items.flatMap((i) => eTagRefsOf(i.event.tags).map((ref) => ({ i, ref })));
    if (rows.length === 0) return;
    await sql`
      insert into event_refs (community_id, ref_id, event_created_at, event_id, event_kind)
      select ${communityId}::uuid, decode(u.ref, 'hex'), to_timestamp(u.created_at), decode(u.id, 'hex'), u.kind
        from unnest(${rows.map((r) => r.ref)}::text[], ${rows.map((r) => r.i.event.created_at)}::bigint[],
                    ${rows.map((r) => r.i.event.id)}::text[], ${rows.map((r) => r.i.event.kind)}::int[]) as u(ref, created_at, id, kind)
      on conflict do nothing`.execute(tx);
  }

  /** Inserts thread rows for new messages and bumps parent and root counters. */
  async applyThreads(tx: Tx, communityId: string, items: readonly StoredEventInput[]): Promise<void> {
    const placed = items.filter(placedInThread);
    if (placed.length === 0) return;
    const anchor = (a: ThreadAnchor | null | undefined) => a ?? { id: null, createdAt: null };
    await sql`
      insert into thread_metadata (community_id, event_created_at, event_id, channel_id, parent_event_id,
                                   parent_event_created_at, root_event_id, root_event_created_at, depth,
                                   reply_count, descendant_count, broadcast)
      select ${communityId}::uuid, to_timestamp(u.created_at), decode(u.id, 'hex'), u.channel_id,
             decode(u.parent_id, 'hex'), to_timestamp(u.parent_at), decode(u.root_id, 'hex'), to_timestamp(u.root_at),
             u.depth, 0, 0, false
        from unnest(${placed.map((i) => i.event.created_at)}::bigint[], ${placed.map((i) => i.event.id)}::text[],
                    ${placed.map((i) => i.channelId)}::uuid[], ${placed.map((i) => anchor(i.thread?.parent).id)}::text[],
                    ${placed.map((i) => anchor(i.thread?.parent).createdAt)}::bigint[],
                    ${placed.map((i) => anchor(i.thread?.root).id)}::text[],
                    ${placed.map((i) => anchor(i.thread?.root).createdAt)}::bigint[],
                    ${placed.map((i) => i.thread?.depth ?? 0)}::int[])
             as u(created_at, id, channel_id, parent_id, parent_at, root_id, root_at, depth)
      on conflict do nothing`.execute(tx);
    await this.bumpCounters(tx, communityId, placed);
  }

  async findThreadParent(tx: Tx, communityId: string, idHex: string): Promise<ParentThreadRow | undefined> {
    const { rows } = await sql<ParentThreadRow>`
      select t.event_id, extract(epoch from t.event_created_at)::bigint as event_created_at, encode(e.pubkey, 'hex') as pubkey, t.channel_id, t.depth,
             t.root_event_id, extract(epoch from t.root_event_created_at)::bigint as root_event_created_at
        from events e
        join thread_metadata t on t.community_id = e.community_id and t.event_created_at = e.created_at and t.event_id = e.id
       where e.community_id = ${communityId}::uuid and e.id = decode(${idHex}, 'hex') and e.deleted_at is null
       limit 1`.execute(tx);
    return rows[0];
  }

  /** The author and channel (null when channel-less) of a live target event; undefined when absent. */
  async findTarget(tx: Tx, communityId: string, idHex: string): Promise<{ pubkey: string; channelId: string | null } | undefined> {
    const { rows } = await sql<{ pubkey: string; channel_id: string | null }>`
      select encode(pubkey, 'hex') as pubkey, channel_id from events
       where community_id = ${communityId}::uuid and id = decode(${idHex}, 'hex') and deleted_at is null
       limit 1`.execute(tx);
    return rows[0] && { pubkey: rows[0].pubkey, channelId: rows[0].channel_id };
  }

  /**
   * What the edit and vote validators need about a live target: its author, kind and channel,
   * and the owner recorded for its author (agent_owners), in one primary-key probe each.
   */
  async findKindTarget(tx: Tx, communityId: string, idHex: string): Promise<KindTarget | undefined> {
    const { rows } = await sql<{ pubkey: Buffer; kind: number; channel_id: string | null; owner_pubkey: string | null }>`
      select e.pubkey, e.kind, e.channel_id, o.owner_pubkey
        from events e
        left join agent_owners o on o.community_id = e.community_id and o.agent_pubkey = encode(e.pubkey, 'hex')
       where e.community_id = ${communityId}::uuid and e.id = decode(${idHex}, 'hex') and e.deleted_at is null
       limit 1`.execute(tx);
    const row = rows[0];
    return row && { pubkey: row.pubkey.toString('hex'), kind: row.kind, channelId: row.channel_id, authorOwner: row.owner_pubkey };
  }

  /** Records an active reaction; false when the actor already has this emoji on the target. */
  async insertReaction(tx: Tx, communityId: string, targetHex: string, actor: string, emoji: string, eventIdHex: string): Promise<boolean> {
    const { rows } = await sql<{ ok: number }>`
      insert into reactions (community_id, target_event_id, actor_pubkey, emoji, reaction_event_id)
      values (${communityId}::uuid, decode(${targetHex}, 'hex'), ${actor}, ${emoji}, decode(${eventIdHex}, 'hex'))
      on conflict (community_id, target_event_id, actor_pubkey, emoji) where deleted_at is null do nothing
      returning 1 as ok`.execute(tx);
    return rows.length > 0;
  }

  /** The newest live version of a replaceable or addressable coordinate, locked. */
  async findCurrentVersion(
    tx: Tx,
    communityId: string,
    pubkeyHex: string,
    kind: number,
    dTag: string | null,
  ): Promise<{ id: Buffer; created_at: string } | undefined> {
    const { rows } = await sql<{ id: Buffer; created_at: string }>`
      select id, extract(epoch from created_at)::bigint as created_at from events
       where community_id = ${communityId}::uuid and pubkey = decode(${pubkeyHex}, 'hex') and kind = ${kind}
         and deleted_at is null and d_tag is not distinct from ${dTag}
       order by events.created_at desc, events.id asc
       limit 1`.execute(tx);
    return rows[0];
  }

  /**
   * Serialises writers of one replaceable coordinate for the rest of the transaction; the wait is
   * recorded under `lockType` (`membership` for the NIP-43 snapshot).
   */
  async lockCoordinate(tx: Tx, communityId: string, pubkeyHex: string, kind: number, dTag: string | null, lockType: AdvisoryLockType = 'replacement'): Promise<void> {
    const key = `${communityId}:${pubkeyHex}:${kind}:${dTag ?? ''}`;
    const take = () => sql`select pg_advisory_xact_lock(hashtextextended(${key}, 0))`.execute(tx);
    await (this.metrics ? this.metrics.advisoryLock(lockType, take) : take());
  }

  async supersedeVersions(tx: Tx, communityId: string, pubkeyHex: string, kind: number, dTag: string | null, keepIdHex: string): Promise<void> {
    await sql`
      update events set deleted_at = now()
       where community_id = ${communityId}::uuid and pubkey = decode(${pubkeyHex}, 'hex') and kind = ${kind}
         and deleted_at is null and d_tag is not distinct from ${dTag} and id <> decode(${keepIdHex}, 'hex')`.execute(tx);
  }

  /** NIP-09: soft-deletes the author's own events by id. Returns the hex ids it deleted. */
  async softDeleteByIds(tx: Tx, communityId: string, authorHex: string, idsHex: readonly string[]): Promise<string[]> {
    if (idsHex.length === 0) return [];
    const { rows } = await sql<{ id: Buffer }>`
      update events set deleted_at = now()
       where community_id = ${communityId}::uuid and id = any(${idsHex.map((h) => Buffer.from(h, 'hex'))}::bytea[])
         and pubkey = decode(${authorHex}, 'hex') and deleted_at is null and kind <> 5
      returning id`.execute(tx);
    // A deleted reaction frees its (actor, target, emoji) slot.
    await sql`
      update reactions set deleted_at = now()
       where community_id = ${communityId}::uuid and actor_pubkey = ${authorHex} and deleted_at is null
         and reaction_event_id = any(${idsHex.map((h) => Buffer.from(h, 'hex'))}::bytea[])`.execute(tx);
    return rows.map((r) => r.id.toString('hex'));
  }

  /**
   * The thread counters of replies that were just deleted (thread_metadata's invariant): each
   * lowers its parent's `reply_count` and its root's `descendant_count` by one. Call it once per
   * deletion, with the ids that deletion removed. Returns the roots whose counts changed.
   */
  async unthread(tx: Tx, communityId: string, deletedIdsHex: readonly string[]): Promise<Array<{ root: ThreadAnchor; channelId: string }>> {
    if (deletedIdsHex.length === 0) return [];
    const { rows } = await sql<{ parent_id: Buffer; parent_at: Date; root_id: Buffer; root_at: Date; channel_id: string }>`
      select t.parent_event_id as parent_id, t.parent_event_created_at as parent_at,
             t.root_event_id as root_id, t.root_event_created_at as root_at, t.channel_id
        from events e
        join thread_metadata t on t.community_id = e.community_id and t.event_created_at = e.created_at and t.event_id = e.id
       where e.community_id = ${communityId}::uuid and e.id = any(${deletedIdsHex.map((h) => Buffer.from(h, 'hex'))}::bytea[])
         and t.parent_event_id is not null and t.root_event_id is not null`.execute(tx);
    if (rows.length === 0) return [];
    // Two statements: a parent that is also the root must see both decrements.
    await sql`
      update thread_metadata t set reply_count = greatest(t.reply_count - u.n, 0)
        from (select p.id, p.at, count(*)::int as n
                from unnest(${rows.map((r) => r.parent_id)}::bytea[], ${rows.map((r) => r.parent_at)}::timestamptz[]) as p(id, at)
               group by p.id, p.at) u
       where t.community_id = ${communityId}::uuid and t.event_created_at = u.at and t.event_id = u.id`.execute(tx);
    await sql`
      update thread_metadata t set descendant_count = greatest(t.descendant_count - u.n, 0)
        from (select r.id, r.at, count(*)::int as n
                from unnest(${rows.map((r) => r.root_id)}::bytea[], ${rows.map((r) => r.root_at)}::timestamptz[]) as r(id, at)
               group by r.id, r.at) u
       where t.community_id = ${communityId}::uuid and t.event_created_at = u.at and t.event_id = u.id`.execute(tx);
    const roots = new Map(rows.map((r) => [r.root_id.toString('hex'), { root: { id: r.root_id.toString('hex'), createdAt: Math.floor(r.root_at.getTime() / 1000) }, channelId: r.channel_id }]));
    return [...roots.values()];
  }

  /** The channel of the newest live version of an addressable coordinate: undefined when none. */
  async findCoordinateChannel(tx: Tx, communityId: string, c: { kind: number; pubkey: string; d: string }): Promise<string | null | undefined> {
    const { rows } = await sql<{ channel_id: string | null }>`
      select channel_id from events
       where community_id = ${communityId}::uuid and pubkey = decode(${c.pubkey}, 'hex') and kind = ${c.kind}
         and d_tag = ${c.d} and deleted_at is null
       order by created_at desc limit 1`.execute(tx);
    return rows.length === 0 ? undefined : rows[0].channel_id;
  }

  /** NIP-09 `a` target: versions of the author's coordinate up to the deletion's time. */
  async softDeleteCoordinate(tx: Tx, communityId: string, authorHex: string, kind: number, dTag: string, untilSecs: number): Promise<number> {
    const res = await sql`
      update events set deleted_at = now()
       where community_id = ${communityId}::uuid and pubkey = decode(${authorHex}, 'hex') and kind = ${kind}
         and d_tag = ${dTag} and created_at <= to_timestamp(${untilSecs}) and deleted_at is null`.execute(tx);
    return Number(res.numAffectedRows ?? 0);
  }

  private async bumpCounters(tx: Tx, communityId: string, placed: readonly StoredEventInput[]): Promise<void> {
    const replies = placed.filter((i) => i.thread?.parent);
    if (replies.length === 0) return;
    const bumps = new Map<string, { id: string; at: number; replies: number; descendants: number; last: number }>();
    const bump = (a: ThreadAnchor, field: 'replies' | 'descendants', at: number) => {
      const key = `${a.createdAt}:${a.id}`;
      const entry = bumps.get(key) ?? { id: a.id, at: a.createdAt, replies: 0, descendants: 0, last: 0 };
      entry[field] += 1;
      entry.last = Math.max(entry.last, at);
      bumps.set(key, entry);
    };
    for (const r of replies) {
      bump(r.thread!.parent!, 'replies', r.event.created_at);
      bump(r.thread!.root ?? r.thread!.parent!, 'descendants', r.event.created_at);
    }
    const list = [...bumps.values()];
    await sql`
      update thread_metadata t
         set reply_count = t.reply_count + u.replies,
             descendant_count = t.descendant_count + u.descendants,
             last_reply_at = greatest(t.last_reply_at, to_timestamp(u.last))
        from unnest(${list.map((b) => b.id)}::text[], ${list.map((b) => b.at)}::bigint[], ${list.map((b) => b.replies)}::int[],
                    ${list.map((b) => b.descendants)}::int[], ${list.map((b) => b.last)}::bigint[])
             as u(id, at, replies, descendants, last)
       where t.community_id = ${communityId}::uuid and t.event_created_at = to_timestamp(u.at) and t.event_id = decode(u.id, 'hex')`.execute(tx);
  }
}
