/**
 * What the membership and moderation tests read back from the real pair: rows on the writer and,
 * after the replica has replayed them, on the replica; whether an event id was stored.
 */
import { Pool } from 'pg';
import { TestDatabase } from '../harness/test-database.js';

export class PairState {
  readonly writer: Pool;
  readonly reader: Pool;

  constructor(private readonly db: TestDatabase) {
    this.writer = new Pool({ connectionString: db.writerUrl, max: 2 });
    this.reader = new Pool({ connectionString: db.readerUrl, max: 2 });
    for (const p of [this.writer, this.reader]) p.on('error', () => undefined);
  }

  /** [writer, replica] answers of one query, the replica read after it caught up with the writer. */
  async both<T>(text: string, params: unknown[], pick: (rows: Record<string, unknown>[]) => T): Promise<[T, T]> {
    const w = pick((await this.writer.query(text, params)).rows);
    await this.db.waitForReplica();
    const r = pick((await this.reader.query(text, params)).rows);
    return [w, r];
  }

  /** The relay_members role of pubkey in the localhost community, on [writer, replica]. */
  role(pubkey: string): Promise<[string | null, string | null]> {
    return this.both(
      `select m.role from relay_members m join communities c on c.id = m.community_id where c.host = 'localhost' and m.pubkey = $1`,
      [pubkey],
      (rows) => (rows[0]?.role as string | undefined) ?? null,
    );
  }

  async stored(eventId: string): Promise<boolean> {
    const { rows } = await this.writer.query('select 1 from events where id = $1', [Buffer.from(eventId, 'hex')]);
    return rows.length > 0;
  }

  /** Live (not superseded or deleted) events of `kind` signed by `author`, newest first. */
  async liveEvents(author: string, kind: number): Promise<Array<{ tags: string[][]; created_at: number }>> {
    const { rows } = await this.writer.query<{ tags: string[][]; created_at: number }>(
      `select tags, extract(epoch from created_at)::bigint::int as created_at from events
        where pubkey = $1 and kind = $2 and deleted_at is null order by created_at desc, id`,
      [Buffer.from(author, 'hex'), kind],
    );
    return rows;
  }

  async close(): Promise<void> {
    await Promise.all([this.writer.end(), this.reader.end()]);
  }
}
