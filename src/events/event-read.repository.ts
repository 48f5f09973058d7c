/**
 * NIP-01 filter → SQL. Every read is confined to one community and to live
 * rows, ordered `created_at DESC, id ASC`. Tag containment is pushed down to the
 * GIN index and re-checked positionally in SQL, so LIMIT counts only real matches.
 */
import { Injectable } from '@nestjs/common';
import { Expression, ExpressionBuilder, Kysely, SqlBool, sql } from 'kysely';
import { NostrEvent, NostrFilter } from '../common/nostr.types.js';
import { DB } from '../database/database.types.js';
import { pageBound, scopeSql } from './event-sql.js';
import { ReadScope } from './read-scope.js';
import { EventRow, rowToEvent } from './stored-event.js';
import { E_TAG_DEADLINE_MS, withStatementDeadline } from '../database/statement-deadline.js';

type Eb = ExpressionBuilder<DB, 'events'>;

@Injectable()
export class EventReadRepository {
  async query(db: Kysely<DB>, scope: ReadScope, filter: NostrFilter, limit: number): Promise<NostrEvent[]> {
    if (limit <= 0 || filter.kinds?.length === 0) return [];
    if (hasETags(filter)) return this.queryByETags(db, scope, filter, limit);
    const rows = await db
      .selectFrom('events')
      .select(['id', 'pubkey', sql<string>`extract(epoch from created_at)::bigint`.as('created_at'), 'kind', 'tags', 'content', 'sig'])
      .where((eb) => eb.and(whereFilter(eb, scope, filter)))
      // Qualified: a bare `created_at` would name the epoch output column above and
      // defeat every (…, created_at DESC, id) index with a full sort.
      .orderBy('events.created_at', 'desc')
      .orderBy('events.id', 'asc')
      .limit(pageBound(limit))
      .execute();
    return (rows as unknown as EventRow[]).map(rowToEvent);
  }

  async count(db: Kysely<DB>, scope: ReadScope, filter: NostrFilter): Promise<number> {
    if (filter.kinds?.length === 0) return 0;
    const run = (on: Kysely<DB>) =>
      on
        .selectFrom('events')
        .select((eb) => eb.fn.countAll<string>().as('n'))
        .where((eb) => eb.and(whereFilter(eb, scope, filter)))
        .executeTakeFirstOrThrow();
    // Seed 002: e-tag counts run under the same tighten-only deadline as e-tag pages.
    const row = hasETags(filter) ? await withStatementDeadline(db, E_TAG_DEADLINE_MS, run) : await run(db);
    return Number(row.n);
  }

  /**
   * Seed 002's set-based form: the whole filtered select is fenced in a
   * MATERIALIZED CTE (ORDER/LIMIT outside), so the planner cannot pick the
   * early-stop backward primary-key walk, under a 20 s tighten-only deadline.
   */
  private async queryByETags(db: Kysely<DB>, scope: ReadScope, filter: NostrFilter, limit: number): Promise<NostrEvent[]> {
    const rows = await withStatementDeadline(db, E_TAG_DEADLINE_MS, (tx) =>
      tx
        .with(
          (cte) => cte('m').materialized(),
          (qb) => qb.selectFrom('events').select(['id', 'pubkey', 'created_at', 'kind', 'tags', 'content', 'sig']).where((eb) => eb.and(whereFilter(eb, scope, filter))),
        )
        .selectFrom('m')
        .select(['m.id', 'm.pubkey', sql<string>`extract(epoch from m.created_at)::bigint`.as('created_at'), 'm.kind', 'm.tags', 'm.content', 'm.sig'])
        .orderBy('m.created_at', 'desc')
        .orderBy('m.id', 'asc')
        .limit(limit)
        .execute(),
    );
    return (rows as unknown as EventRow[]).map(rowToEvent);
  }
}

function hasETags(filter: NostrFilter): boolean {
  return (filter.tags.e?.length ?? 0) > 0;
}

export function whereFilter(eb: Eb, scope: ReadScope, f: NostrFilter): Expression<SqlBool>[] {
  const conds: Expression<SqlBool>[] = [eb('community_id', '=', scope.communityId), eb('deleted_at', 'is', null)];
  // Channel visibility in SQL, applied before LIMIT so a page is never short of visible rows.
  conds.push(scopeSql(scope, sql.ref('channel_id')));
  // A single value is bound as `=`: Postgres 15 cannot return `col = ANY(array)` in index
  // order, so the one-value case (the common one) would otherwise sort every match.
  if (f.ids) conds.push(f.ids.length === 1 ? sql<SqlBool>`id = ${hexArray(f.ids)[0]}` : sql<SqlBool>`id = any(${hexArray(f.ids)}::bytea[])`);
  if (f.authors) {
    conds.push(f.authors.length === 1 ? sql<SqlBool>`pubkey = ${hexArray(f.authors)[0]}` : sql<SqlBool>`pubkey = any(${hexArray(f.authors)}::bytea[])`);
  }
  if (f.kinds) conds.push(f.kinds.length === 1 ? sql<SqlBool>`kind = ${f.kinds[0]}::int` : sql<SqlBool>`kind = any(${f.kinds}::int[])`);
  if (f.since !== undefined) conds.push(sql<SqlBool>`created_at >= to_timestamp(${f.since})`);
  if (f.until !== undefined && f.before_id === undefined) conds.push(sql<SqlBool>`created_at <= to_timestamp(${f.until})`);
  if (f.until !== undefined && f.before_id !== undefined) {
    // Composite cursor for `created_at DESC, id ASC`: strictly after (until, before_id).
    conds.push(
      sql<SqlBool>`(created_at < to_timestamp(${f.until}) or (created_at = to_timestamp(${f.until}) and id > decode(${f.before_id}, 'hex')))`,
    );
  }
  for (const [key, values] of Object.entries(f.tags)) {
    if (values.length === 0) return [sql<SqlBool>`false`];
    // One bound jsonb[] per tag key; `@> any(...)` becomes a bitmap OR over the GIN index.
    const probes = values.map((v) => JSON.stringify([[key, v]]));
    conds.push(sql<SqlBool>`tags @> any(${probes}::jsonb[])`);
    // Containment also matches reordered or namespaced arrays: re-check NIP-01's
    // position (element 0 is the name, element 1 a value) before LIMIT.
    conds.push(sql<SqlBool>`exists (select 1 from jsonb_array_elements(tags) t where t->>0 = ${key} and t->>1 = any(${values}::text[]))`);
  }
  return conds;
}

function hexArray(values: readonly string[]): Buffer[] {
  return values.map((v) => Buffer.from(v, 'hex'));
}
