/**
 * The thread summary the relay signs as kind 39005, read in one place for both places that send
 * it: live, after a write changed a thread's counts (ingest), and in the bridge's channel window
 * (`include_summaries`). Counts and the last reply come from the root's `thread_metadata` row;
 * the participants are the ten latest distinct authors among the thread's newest 500 live
 * replies, walked backwards on idx_thread_metadata_root_created, so a summary of a thread of
 * 10,000 replies costs what one of 20 does. The list is the thread's ten latest authors unless
 * those 500 replies hold fewer than ten.
 */
import { DB } from '@buzz-relay/read-path';
import { Kysely, sql, Transaction } from 'kysely';

/** Newest replies a summary looks at for its participants. */
export const PARTICIPANT_WINDOW = 500;
/** Participants a summary names. */
export const PARTICIPANTS = 10;

export interface ThreadRoot {
  readonly id: string;
  /** Unix seconds. */
  readonly createdAt: number;
}

export interface ThreadSummary {
  readonly rootId: string;
  readonly replyCount: number;
  readonly descendantCount: number;
  readonly lastReplyAt: number | null;
  /** Hex pubkeys, latest reply first. */
  readonly participants: string[];
}

/**
 * The summaries of `roots` that have a thread row, in no particular order. `repliedOnly` leaves
 * out roots without a live reply (the bridge summarises threads; ingest also reports a thread
 * whose last reply was just deleted).
 */
export async function threadSummaries(
  db: Kysely<DB> | Transaction<DB>,
  communityId: string,
  roots: readonly ThreadRoot[],
  { repliedOnly }: { repliedOnly: boolean },
): Promise<ThreadSummary[]> {
  if (roots.length === 0) return [];
  const { rows } = await sql<{ root: Buffer; reply_count: number; descendant_count: number; last_reply_at: string | null; participants: string[] | null }>`
    select t.event_id as root, t.reply_count, t.descendant_count,
           extract(epoch from t.last_reply_at)::bigint as last_reply_at,
           (select array_agg(p.pk order by p.latest desc) from (
              select encode(r.pubkey, 'hex') as pk, max(r.created_at) as latest
                from (select d.event_created_at, d.event_id from thread_metadata d
                       where d.community_id = t.community_id and d.root_event_id = t.event_id
                       order by d.event_created_at desc, d.event_id desc limit ${PARTICIPANT_WINDOW}) recent
                join events r on r.community_id = t.community_id and r.created_at = recent.event_created_at and r.id = recent.event_id
               where r.deleted_at is null
               group by r.pubkey order by latest desc limit ${PARTICIPANTS}) p) as participants
      from thread_metadata t
     where t.community_id = ${communityId}::uuid
       and (t.event_created_at, t.event_id) in (select to_timestamp(u.at), decode(u.id, 'hex')
                                                from unnest(${roots.map((r) => r.createdAt)}::bigint[], ${roots.map((r) => r.id)}::text[]) as u(at, id))
       ${repliedOnly ? sql`and t.descendant_count > 0` : sql``}`.execute(db);
  return rows.map((r) => ({
    rootId: r.root.toString('hex'),
    replyCount: r.reply_count,
    descendantCount: r.descendant_count,
    lastReplyAt: r.last_reply_at === null ? null : Number(r.last_reply_at),
    participants: r.participants ?? [],
  }));
}
