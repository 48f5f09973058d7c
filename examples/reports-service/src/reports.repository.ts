import { Injectable } from '@nestjs/common';
import { BOUNDED, RoutedReader, type DB } from '@buzz-relay/read-path';
import { type Kysely, sql } from 'kysely';

export interface Report {
  readonly id: number;
  readonly title: string;
  /** Which server answered: the replica (a standby) or the writer. */
  readonly servedBy: 'replica' | 'writer';
}

/** `reports` is this service's own table in the relay's database; the relay's schema types do not name it. */
function reportById(db: Kysely<DB>, id: number, delayMs: number): Promise<Report | undefined> {
  return sql<Report>`
    select id, title, case when pg_is_in_recovery() then 'replica' else 'writer' end as "servedBy"
    from reports, pg_sleep(${delayMs / 1000})
    where id = ${id}`
    .execute(db)
    .then((r) => r.rows[0]);
}

@Injectable()
export class ReportsRepository {
  constructor(private readonly routed: RoutedReader) {}

  /**
   * Routed: the replica when the fence proves it at most `readMaxAgeMs` behind, else the writer;
   * shed (HistoryReadRejectedError, answered 503 by the module's filter) when the replica is busy. `delayMs` stands in for a
   * slow report.
   */
  find(id: number, delayMs = 0): Promise<Report | undefined> {
    return this.routed.read({ path: 'reports_by_id', predicate: BOUNDED }, (db) => reportById(db, id, delayMs));
  }

  /** Writer-pinned: always current (read-after-write), under the writer-read cap. */
  findCurrent(id: number): Promise<Report | undefined> {
    return this.routed.clientReadOnWriter('subscription_history', (db) => reportById(db, id, 0));
  }
}
