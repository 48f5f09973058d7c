/**
 * NIP-01 filter → rows of one community. The SQL is built in event-read.queries.ts; this runs it.
 * A history page filtered by a single-letter tag walks the event_tags index table; other tag
 * filters are pushed down to the GIN index (`#e` ids to the event_refs table instead, `#h` to the
 * channel scope).
 */
import { matchesNothing } from './filter.js';
import { Injectable } from '@nestjs/common';
import { CompiledQuery, Kysely } from 'kysely';
import { NostrEvent, NostrFilter } from '../common/nostr.types.js';
import { DB } from '../database/database.types.js';
import { eTagPage, filterConditions, filterPredicate, hasETags, hasValueIndependentPlan, PageStatement, pageStatement, recentFloor, referencingCount } from './event-read.queries.js';
import { ReadScope } from './read-scope.js';
import { EventTextRow, rowToEvent, StoredEvent } from './stored-event.js';
import { E_TAG_DEADLINE_MS, withStatementDeadline } from '../database/statement-deadline.js';
import { GENERIC_PLAN } from '../database/statement-cache.js';

@Injectable()
export class EventReadRepository {
  /**
   * `offset` rows are skipped first (the bridge catch-all's `page`); 0 for every other read.
   *
   * Without an offset the page is first read from the recent partitions alone (RECENT_WINDOW_SECS,
   * see recentFloor); only a page that window cannot fill is read again over every partition.
   */
  async query(db: Kysely<DB>, scope: ReadScope, filter: NostrFilter, limit: number, offset = 0, nowMs = Date.now()): Promise<NostrEvent[]> {
    if (limit <= 0 || matchesNothing(filter)) return [];
    if (hasETags(filter)) return this.queryByETags(db, scope, filter, limit, offset);
    const parts = filterConditions(scope, filter);
    if (parts === undefined) return [];
    const plan = hasValueIndependentPlan(scope, filter) ? GENERIC_PLAN : '';
    const floor = offset === 0 ? recentFloor(filter, nowMs) : undefined;
    if (floor !== undefined) {
      const recent = await this.page(db, pageStatement(scope, filter, parts, plan, limit, 0, floor));
      if (recent.length >= limit) return recent;
    }
    return this.page(db, pageStatement(scope, filter, parts, plan, limit, offset));
  }

  /** One statement for the page (pageStatement). */
  private async page(db: Kysely<DB>, statement: PageStatement): Promise<StoredEvent[]> {
    // Built as text, not through Kysely: this is the REQ hot path (see SqlFragment).
    const { rows } = await db.executeQuery<EventTextRow>(CompiledQuery.raw(statement.text, statement.params));
    return rows.map((row) => new StoredEvent(row));
  }

  async count(db: Kysely<DB>, scope: ReadScope, filter: NostrFilter): Promise<number> {
    if (matchesNothing(filter)) return 0;
    const byRefs = referencingCount(scope, filter);
    const run = async (on: Kysely<DB>) => {
      if (byRefs) {
        const { rows } = await byRefs.execute(on);
        if (rows.length === 0) throw new Error('count returned no row');
        return rows[0];
      }
      return on
        .selectFrom('events')
        .select((eb) => eb.fn.countAll<string>().as('n'))
        .where(filterPredicate(scope, filter))
        .executeTakeFirstOrThrow();
    };
    // Seed 002: e-tag counts run under the same tighten-only deadline as e-tag pages.
    const row = hasETags(filter) ? await withStatementDeadline(db, E_TAG_DEADLINE_MS, run) : await run(db);
    return Number(row.n);
  }

  /** An `#e` page (eTagPage) under seed 002's 20 s tighten-only deadline. */
  private async queryByETags(db: Kysely<DB>, scope: ReadScope, filter: NostrFilter, limit: number, offset: number): Promise<NostrEvent[]> {
    const statement = eTagPage(scope, filter, limit, offset);
    const rows = await withStatementDeadline(db, E_TAG_DEADLINE_MS, async (tx) => (await statement.execute(tx)).rows);
    return rows.map(rowToEvent);
  }
}
