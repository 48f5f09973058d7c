/**
 * NIP-01 filter → rows of one community. The SQL is built in event-read.queries.ts; this runs it.
 * A history page filtered by a single-letter tag walks the event_tags index table; other tag
 * filters are pushed down to the GIN index (`#e` ids to the event_refs table instead, `#h` to the
 * channel scope).
 */
import { matchesNothing } from '../nostr/filter.js';
import { Injectable } from '@nestjs/common';
import { CompiledQuery, Kysely, RawBuilder } from 'kysely';
import { NostrEvent, NostrFilter } from '../nostr/nostr.types.js';
import { DB } from '@buzz-relay/read-path';
import { byteCapped, byteCappedETagPage, eTagPage, filterConditions, filterPredicate, hasETags, hasValueIndependentPlan, PageStatement, pageStatement, recentFloor, referencingCount } from './event-read.queries.js';
import { ReadScope } from '../channels/read-scope.js';
import { EventRow, EventTextRow, rowToEvent, StoredEvent } from './stored-event.js';
import { E_TAG_DEADLINE_MS, GENERIC_PLAN, withStatementDeadline } from '@buzz-relay/read-path/internal';

@Injectable()
export class EventReadRepository {
  /**
   * `offset` rows are skipped first (the bridge catch-all's `page`); 0 for every other read.
   *
   * Without an offset the page is first read from the recent partitions alone (RECENT_WINDOW_SECS,
   * see recentFloor); only a page that window cannot fill is read again over every partition.
   */
  async query(db: Kysely<DB>, scope: ReadScope, filter: NostrFilter, limit: number, offset = 0, nowMs = Date.now()): Promise<NostrEvent[]> {
    return (await this.queryPage(db, scope, filter, limit, offset, nowMs)).events;
  }

  /**
   * query(), and with `byteCap` the page ends where its rows reach that many bytes (byteCapped;
   * at least one row). `cut`: rows were left out for the cap, so the page goes on after its last
   * row (the caller reads on from that cursor).
   */
  async queryPage(db: Kysely<DB>, scope: ReadScope, filter: NostrFilter, limit: number, offset = 0, nowMs = Date.now(), byteCap?: number): Promise<HistoryPage> {
    if (limit <= 0 || matchesNothing(filter)) return EMPTY_PAGE;
    if (hasETags(filter)) return this.queryByETags(db, scope, filter, limit, offset, byteCap);
    const parts = filterConditions(scope, filter);
    if (parts === undefined) return EMPTY_PAGE;
    const plan = hasValueIndependentPlan(scope, filter) ? GENERIC_PLAN : '';
    const floor = offset === 0 ? recentFloor(filter, nowMs) : undefined;
    if (floor !== undefined) {
      const recent = await this.page(db, pageStatement(scope, filter, parts, plan, limit, 0, floor), byteCap);
      if (recent.cut || recent.events.length >= limit) return recent;
    }
    return this.page(db, pageStatement(scope, filter, parts, plan, limit, offset), byteCap);
  }

  /** One statement for the page (pageStatement). */
  private async page(db: Kysely<DB>, statement: PageStatement, byteCap: number | undefined): Promise<HistoryPage> {
    // Built as text, not through Kysely: this is the REQ hot path (see SqlFragment).
    const run = byteCap === undefined ? statement : byteCapped(statement, byteCap);
    const { rows } = await db.executeQuery<EventTextRow & { page_rows?: string }>(CompiledQuery.raw(run.text, run.params));
    return { events: rows.map((row) => new StoredEvent(row)), cut: wasCut(rows) };
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
  private async queryByETags(db: Kysely<DB>, scope: ReadScope, filter: NostrFilter, limit: number, offset: number, byteCap: number | undefined): Promise<HistoryPage> {
    const page = eTagPage(scope, filter, limit, offset);
    const statement: RawBuilder<EventRow & { page_rows?: string }> = byteCap === undefined ? page : byteCappedETagPage(page, byteCap);
    const rows = await withStatementDeadline(db, E_TAG_DEADLINE_MS, async (tx) => (await statement.execute(tx)).rows);
    return { events: rows.map(rowToEvent), cut: wasCut(rows) };
  }
}

/** One read of a filter's page: its events in page order, and whether a byte cap cut it short. */
export interface HistoryPage {
  readonly events: NostrEvent[];
  readonly cut: boolean;
}

const EMPTY_PAGE: HistoryPage = { events: [], cut: false };

/** Whether a byte-capped page lost rows to its cap (each row says how many the page had). */
function wasCut(rows: ReadonlyArray<{ page_rows?: string }>): boolean {
  return rows.length > 0 && rows[0].page_rows !== undefined && Number(rows[0].page_rows) > rows.length;
}
