/**
 * Subscription lifecycle (seed 002) through the running relay: every frame a
 * request emits is fenced on its owner token. A superseded request says
 * nothing, a client CLOSE is acknowledged at once and nothing of the retired
 * request follows it, and a timed-out subscription's CLOSED goes out before a
 * replacement with the same id answers. History reads are held slow with a real
 * lock on `events` and cancelled by a real statement timeout.
 */
import { Client } from 'pg';
import { createTestDatabase, TestDatabase } from '../harness/test-database.js';
import { newIdentity, RawClient } from '../harness/nostr-clients.js';
import { RelayProcess, startRelay } from '../harness/relay-process.js';

let db: TestDatabase;
let relay: RelayProcess;
let locker: Client;
const alice = newIdentity();
const TIMEOUT_MS = 400;

beforeAll(async () => {
  db = await createTestDatabase();
  relay = await startRelay({ DATABASE_URL: db.writerUrl, BUZZ_DEFAULT_COMMUNITY_HOSTS: 'localhost', BUZZ_DB_STATEMENT_TIMEOUT_MS: String(TIMEOUT_MS) });
  locker = new Client({ connectionString: db.writerUrl });
  locker.on('error', () => undefined);
  await locker.connect();
});

afterAll(async () => {
  await locker?.end();
  await relay?.stop();
  await db?.drop();
});

async function lockEvents(): Promise<() => Promise<void>> {
  await locker.query('begin');
  await locker.query('lock table events in access exclusive mode');
  return async () => void (await locker.query('rollback'));
}

/** Waits until the relay has had time to cancel every query started so far. */
function pastTheDeadline(): Promise<void> {
  return new Promise((r) => setTimeout(r, TIMEOUT_MS * 3));
}

const closedFor = (c: RawClient, sub: string) => c.frames.filter((f) => f[0] === 'CLOSED' && f[1] === sub);

describe('subscription lifecycle', () => {
  it('keeps a superseded request silent: one CLOSED for the id, from its replacement', async () => {
    const c = await RawClient.authed(relay.wsUrl, alice);
    const unlock = await lockEvents();
    try {
      c.send(['REQ', 'x', { kinds: [1] }]);
      c.send(['REQ', 'x', { kinds: [1], limit: 1 }]);
      await c.waitFor((f) => f[0] === 'CLOSED' && f[1] === 'x');
      await pastTheDeadline();
    } finally {
      await unlock();
    }
    expect(closedFor(c, 'x')).toEqual([['CLOSED', 'x', 'error: query timed out']]);
    expect(c.frames.filter((f) => f[0] === 'EOSE' && f[1] === 'x')).toEqual([]);
    c.close();
  });

  it('acknowledges a client CLOSE at once and emits nothing of the retired request afterwards', async () => {
    const c = await RawClient.authed(relay.wsUrl, alice);
    const unlock = await lockEvents();
    try {
      c.send(['REQ', 'y', { kinds: [1] }]);
      c.send(['CLOSE', 'y']);
      expect(await c.waitFor((f) => f[0] === 'CLOSED' && f[1] === 'y')).toEqual(['CLOSED', 'y', '']);
      await pastTheDeadline();
    } finally {
      await unlock();
    }
    expect(closedFor(c, 'y')).toEqual([['CLOSED', 'y', '']]);
    expect(c.frames.filter((f) => f[1] === 'y' && f[0] !== 'CLOSED')).toEqual([]);
    c.close();
  });

  it('sends a timed-out subscription’s CLOSED before its replacement answers', async () => {
    const c = await RawClient.authed(relay.wsUrl, alice);
    const unlock = await lockEvents();
    try {
      c.send(['REQ', 'z', { kinds: [1] }]);
      await c.waitFor((f) => f[0] === 'CLOSED' && f[1] === 'z');
    } finally {
      await unlock();
    }
    const { end } = await c.req('z', { kinds: [1] });
    expect(end).toEqual(['EOSE', 'z']);
    const zFrames = c.frames.filter((f) => f[1] === 'z').map((f) => f[0]);
    expect(zFrames).toEqual(['CLOSED', 'EOSE']);
    c.close();
  });

  it('lets a closed id be claimed again for live delivery', async () => {
    const c = await RawClient.authed(relay.wsUrl, alice);
    await c.req('live', { kinds: [1], '#t': ['lifecycle'] });
    c.send(['CLOSE', 'live']);
    await c.waitFor((f) => f[0] === 'CLOSED' && f[1] === 'live');
    await c.req('live', { kinds: [1], '#t': ['lifecycle'] });
    const ev = alice.sign({ kind: 1, content: 'live again', tags: [['t', 'lifecycle']] });
    await c.publish(ev);
    const got = await c.waitFor((f) => f[0] === 'EVENT' && f[1] === 'live' && (f[2] as { id: string }).id === ev.id);
    expect(got[1]).toBe('live');
    c.close();
  });
});
