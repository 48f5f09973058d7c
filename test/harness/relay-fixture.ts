/**
 * The usual end-to-end fixture: a fresh test database, a writer pool for assertions and
 * fault setup, and the built relay bound to the `localhost` community on the writer + replica
 * pair. Extra relays on the same database take `relayEnv(db, …)`.
 */
import { Pool } from 'pg';
import { RelayProcess, startRelay } from './relay-process.js';
import { createTestDatabase, TestDatabase } from './test-database.js';

export interface RelayFixture {
  readonly db: TestDatabase;
  readonly writer: Pool;
  readonly relay: RelayProcess;
  close(): Promise<void>;
}

export function relayEnv(db: TestDatabase, extra: Record<string, string> = {}): Record<string, string> {
  return { DATABASE_URL: db.writerUrl, READ_DATABASE_URL: db.readerUrl ?? '', BUZZ_DEFAULT_COMMUNITY_HOSTS: 'localhost', ...extra };
}

export async function startRelayFixture(extra: Record<string, string> = {}): Promise<RelayFixture> {
  const db = await createTestDatabase();
  const writer = new Pool({ connectionString: db.writerUrl, max: 4 });
  writer.on('error', () => undefined);
  const relay = await startRelay(relayEnv(db, extra));
  return {
    db,
    writer,
    relay,
    close: async () => {
      await relay.stop();
      await writer.end();
      await db.drop();
    },
  };
}
