import { Injectable } from '@nestjs/common';
import { Kysely, sql } from 'kysely';
import { DatabaseService, DB, RoutedReader } from '@buzz-relay/read-path';

export interface Community {
  readonly id: string;
  readonly host: string;
  readonly archived: boolean;
  /** The workspace icon set by kind 9033 (NIP-11 `icon`), if any. */
  readonly icon: string | null;
}

/** What a 9033 changes; an absent field is left as it is. */
export interface WorkspaceProfile {
  /** The new icon; null clears it. */
  readonly icon?: string | null;
  readonly threadRepliesInChannel?: boolean;
}

/** Community lookups. Tenant resolution always reads the writer. */
@Injectable()
export class CommunityRepository {
  constructor(
    private readonly db: DatabaseService,
    private readonly routed: RoutedReader,
  ) {}

  /** Looks the host up in communities first, then in community_host_aliases. */
  async findByHost(hosts: readonly string[]): Promise<Community | undefined> {
    // The first host is the most specific; a direct host beats an alias of the same name.
    const row = await this.routed.internalReadOnWriter('tenant_resolution', (db) => sql<{ id: string; host: string; archived: boolean; icon: string | null }>`
      select id, host, archived, icon from (
        select c.id, c.host, c.host as matched, (c.archived_at is not null) as archived, c.icon, 0 as rank
          from communities c where c.host = any(${hosts as string[]}::text[])
        union all
        select c.id, c.host, a.host as matched, (c.archived_at is not null) as archived, c.icon, 1 as rank
          from community_host_aliases a join communities c on c.id = a.community_id
         where a.host = any(${hosts as string[]}::text[])
      ) m
      order by array_position(${hosts as string[]}::text[], m.matched), m.rank
      limit 1`.execute(db));
    const r = row.rows[0];
    return r ? { id: r.id, host: r.host, archived: r.archived, icon: r.icon } : undefined;
  }

  async settings(communityId: string): Promise<{ threadRepliesInChannel: boolean }> {
    const row = await this.routed.internalReadOnWriter('tenant_resolution', (db) =>
      db.selectFrom('communities').select('thread_replies_in_channel').where('id', '=', communityId).executeTakeFirst(),
    );
    return { threadRepliesInChannel: row?.thread_replies_in_channel ?? false };
  }

  /** Applies a workspace profile (kind 9033) in the caller's writer transaction. */
  async setProfile(db: Kysely<DB>, communityId: string, profile: WorkspaceProfile): Promise<void> {
    const set: { icon?: string | null; thread_replies_in_channel?: boolean } = {};
    if (profile.icon !== undefined) set.icon = profile.icon;
    if (profile.threadRepliesInChannel !== undefined) set.thread_replies_in_channel = profile.threadRepliesInChannel;
    if (Object.keys(set).length === 0) return;
    await db.updateTable('communities').set(set).where('id', '=', communityId).execute();
  }

  /**
   * Creates a community for the first host with the others as aliases; idempotent. `takeAlias`
   * (the admin CLI's `--move`): the first host stops being another community's alias in the same
   * transaction.
   */
  async ensureCommunity(hosts: readonly string[], name: string, takeAlias = false): Promise<string> {
    const [primary, ...aliases] = hosts;
    // Start-up (the default hosts) and the admin CLI's create-community: `bootstrap` either way.
    return this.db.withWriter('bootstrap', (db) => db.transaction().execute(async (tx) => {
      if (takeAlias) await tx.deleteFrom('community_host_aliases').where('host', '=', primary).execute();
      await tx
        .insertInto('communities')
        .values({ host: primary, name })
        .onConflict((oc) => oc.column('host').doNothing())
        .execute();
      const { id } = await tx.selectFrom('communities').select('id').where('host', '=', primary).executeTakeFirstOrThrow();
      for (const alias of aliases) {
        await tx
          .insertInto('community_host_aliases')
          .values({ host: alias, community_id: id })
          .onConflict((oc) => oc.column('host').doNothing())
          .execute();
      }
      return id;
    }));
  }
}
