/**
 * A thread's relay-signed summary (kind 39005) says the same thing wherever a client meets it:
 * live, when a reply changes the counts, and in the bridge's channel window (`include_summaries`).
 * Its participants are the ten latest authors among the thread's newest 500 replies, a bound that
 * keeps a reply to a long thread as cheap as one to a short thread; the test's thread is over that
 * bound, with one author found only in its oldest reply. The relay runs as a child process on the
 * real writer + streaming replica pair.
 */
import { randomUUID } from 'node:crypto';
import { type VerifiedEvent } from 'nostr-tools/pure';
import { newIdentity, nip98Header, RawClient } from '../harness/nostr-clients.js';
import { RelayProcess, startRelay } from '../harness/relay-process.js';
import { createTestDatabase, TestDatabase } from '../harness/test-database.js';

const REPLIES = 501;

let db: TestDatabase;
let relay: RelayProcess;
const alice = newIdentity();
const bob = newIdentity();
const carol = newIdentity();
const channel = randomUUID();
let a: RawClient;
let b: RawClient;
let root: VerifiedEvent;

beforeAll(async () => {
  db = await createTestDatabase();
  relay = await startRelay({
    DATABASE_URL: db.writerUrl,
    READ_DATABASE_URL: db.readerUrl ?? '',
    BUZZ_DEFAULT_COMMUNITY_HOSTS: 'localhost',
    BUZZ_RATE_LIMIT_HUMAN_WS_EVENTS_PER_SEC: '1000',
    BUZZ_RATE_LIMIT_HUMAN_MESSAGES_PER_MIN: '100000',
    BUZZ_RATE_LIMIT_HUMAN_API_CALLS_PER_MIN: '1000',
  });
  a = await RawClient.authed(relay.wsUrl, alice);
  b = await RawClient.authed(relay.wsUrl, bob);
  const c = await RawClient.authed(relay.wsUrl, carol);
  expect(await a.publish(alice.sign({ kind: 9007, tags: [['h', channel], ['name', 'long threads']] }))).toEqual([true, '']);
  const now = Math.floor(Date.now() / 1000);
  root = alice.sign({ kind: 9, content: 'a long thread', tags: [['h', channel]], created_at: now - 850 });
  expect(await a.publish(root)).toEqual([true, '']);
  // Carol's one reply is the thread's oldest; bob's 500 after it push it out of the newest 500.
  expect(await c.publish(reply(carol, now - 800))).toEqual([true, '']);
  c.close();
  const bobs = Array.from({ length: REPLIES - 2 }, (_, i) => reply(bob, now - 700 + i));
  const from = b.frames.length;
  for (const ev of bobs) b.send(['EVENT', ev]);
  for (const ev of bobs) expect((await b.waitFor((f) => f[0] === 'OK' && f[1] === ev.id, 30_000, from))[2]).toBe(true);
}, 120_000);

afterAll(async () => {
  a?.close();
  b?.close();
  await relay?.stop();
  await db?.drop();
});

function reply(author: typeof bob, createdAt: number): VerifiedEvent {
  return author.sign({ kind: 9, content: 'me too', tags: [['h', channel], ['e', root.id, '', 'root']], created_at: createdAt });
}

async function bridgeSummary(): Promise<Record<string, unknown>> {
  const body = JSON.stringify([{ top_level: true, '#h': [channel], limit: 10, include_summaries: true }]);
  const res = await fetch(`${relay.httpUrl}/query`, { method: 'POST', headers: { authorization: nip98Header(alice, `${relay.httpUrl}/query`, body) }, body });
  expect(res.status).toBe(200);
  const summary = ((await res.json()) as VerifiedEvent[]).find((e) => e.kind === 39005 && e.tags.some((t) => t[0] === 'e' && t[1] === root.id));
  return JSON.parse(summary!.content) as Record<string, unknown>;
}

describe('a thread over 500 replies', () => {
  it('gets the same summary live and from the bridge, participants from its newest 500 replies', async () => {
    const sub = await a.req('summaries', { kinds: [39005], '#h': [channel] });
    expect(sub.end[0]).toBe('EOSE');
    const from = a.frames.length;
    const last = reply(bob, Math.floor(Date.now() / 1000));
    expect(await b.publish(last)).toEqual([true, '']);
    const live = await a.waitFor((f) => f[0] === 'EVENT' && f[1] === 'summaries' && (f[2] as VerifiedEvent).tags.some((t) => t[0] === 'e' && t[1] === root.id), 10_000, from);
    const liveSummary = JSON.parse((live[2] as VerifiedEvent).content) as Record<string, unknown>;
    expect(liveSummary).toMatchObject({ reply_count: REPLIES, descendant_count: REPLIES, last_reply_at: last.created_at, participants: [bob.pubkey] });
    expect(await bridgeSummary()).toEqual(liveSummary);
  });
});
