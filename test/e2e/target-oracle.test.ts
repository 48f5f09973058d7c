/**
 * No write is an oracle for what a private channel holds (docs/security.md, "Write targets"): on
 * every write path that names an event id, an event the writer may not read is answered exactly
 * as an id that exists nowhere. Each probe names a message of a private channel the prober is not
 * in, then a random id, and the two answers must be the same `OK` (or the same HTTP answer); the
 * private message is left as it was on the writer and on the streaming replica.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { Pool } from 'pg';
import type { VerifiedEvent } from 'nostr-tools/pure';
import { Identity, newIdentity, nip98Header, RawClient } from '../harness/nostr-clients.js';
import { RelayFixture, startRelayFixture } from '../harness/relay-fixture.js';

let fixture: RelayFixture;
let replica: Pool;
const clients: RawClient[] = [];

const alice = newIdentity(); // member of the private channel
const mallory = newIdentity(); // outsider; owner of an open channel
let privateChannel: string;
let openChannel: string;
let secret: VerifiedEvent; // alice's message in the private channel
let visible: VerifiedEvent; // alice's message in the open channel
let m: RawClient;

beforeAll(async () => {
  fixture = await startRelayFixture({ BUZZ_RATE_LIMIT_HUMAN_WS_EVENTS_PER_SEC: '200', BUZZ_RATE_LIMIT_HUMAN_MESSAGES_PER_MIN: '5000' });
  replica = new Pool({ connectionString: fixture.db.readerUrl, max: 2 });
  replica.on('error', () => undefined);
  const a = await connect(alice);
  m = await connect(mallory);
  privateChannel = randomUUID();
  openChannel = randomUUID();
  expect(await a.publish(alice.sign({ kind: 9007, tags: [['h', privateChannel], ['name', 'hidden'], ['visibility', 'private']] }))).toEqual([true, '']);
  expect(await m.publish(mallory.sign({ kind: 9007, tags: [['h', openChannel], ['name', 'lobby'], ['visibility', 'open']] }))).toEqual([true, '']);
  secret = alice.sign({ kind: 9, content: 'members only', tags: [['h', privateChannel]] });
  visible = alice.sign({ kind: 9, content: 'hello lobby', tags: [['h', openChannel]] });
  expect(await a.publish(secret)).toEqual([true, '']);
  expect(await a.publish(visible)).toEqual([true, '']);
});

afterAll(async () => {
  for (const c of clients) c.close();
  await replica?.end();
  await fixture?.close();
});

async function connect(id: Identity): Promise<RawClient> {
  const c = await RawClient.authed(fixture.relay.wsUrl, id);
  clients.push(c);
  return c;
}

const randomId = () => randomBytes(32).toString('hex');

/** `deleted_at is null` of the event on the writer and, once it replayed, on the replica. */
async function liveOnBoth(id: string): Promise<[boolean, boolean]> {
  const q = 'select deleted_at is null as live from events where id = $1';
  const w = (await fixture.writer.query<{ live: boolean }>(q, [Buffer.from(id, 'hex')])).rows[0]?.live ?? false;
  await fixture.db.waitForReplica();
  const r = (await replica.query<{ live: boolean }>(q, [Buffer.from(id, 'hex')])).rows[0]?.live ?? false;
  return [w, r];
}

async function stored(id: string): Promise<boolean> {
  return ((await fixture.writer.query('select 1 from events where id = $1', [Buffer.from(id, 'hex')])).rowCount ?? 0) > 0;
}

/** Mallory's answers to the same write naming the private message, then a random id. */
async function probe(make: (target: string) => VerifiedEvent): Promise<{ hidden: [boolean, string]; missing: [boolean, string] }> {
  const hidden = await m.publish(make(secret.id));
  const missing = await m.publish(make(randomId()));
  return { hidden, missing };
}

describe('a write naming an event the writer cannot read answers as for a missing one', () => {
  it.each<[string, (target: string) => VerifiedEvent, [boolean, string]]>([
    ['a reply (thread parent) in another channel', (t) => mallory.sign({ kind: 9, content: 'reply', tags: [['h', openChannel], ['e', t, '', 'reply']] }), [false, 'invalid: thread parent event not found']],
    ['a forum comment whose parent is hidden', (t) => mallory.sign({ kind: 45003, content: 'comment', tags: [['h', openChannel], ['e', t, '', 'root']] }), [false, 'invalid: thread parent event not found']],
    ['a reaction (7)', (t) => mallory.sign({ kind: 7, content: '+', tags: [['e', t]] }), [false, 'invalid: reaction target event not found']],
    ['an edit (40003) from another channel', (t) => mallory.sign({ kind: 40003, content: 'mine now', tags: [['h', openChannel], ['e', t]] }), [false, 'invalid: edited message not found']],
    ['an edit (40003) naming the private channel', (t) => mallory.sign({ kind: 40003, content: 'mine now', tags: [['h', privateChannel], ['e', t]] }), [false, 'invalid: edited message not found']],
    ['a forum vote (45002)', (t) => mallory.sign({ kind: 45002, content: '+', tags: [['h', openChannel], ['e', t]] }), [false, 'invalid: vote target must be a forum post or comment in the same channel']],
    ['a report (1984)', (t) => mallory.sign({ kind: 1984, tags: [['p', alice.pubkey], ['e', t, 'spam']] }), [false, 'invalid: report target event not found']],
  ])('%s', async (_what, make, expected) => {
    const { hidden, missing } = await probe(make);
    expect(hidden).toEqual(missing);
    expect(hidden).toEqual(expected);
    expect(await liveOnBoth(secret.id)).toEqual([true, true]);
  });

  it('a reaction to an open message that also names a private one (two e tags) is refused as for a missing target, and never reaches the private message', async () => {
    const sneaky = mallory.sign({ kind: 7, content: '+', tags: [['e', secret.id], ['e', visible.id]] });
    const lost = mallory.sign({ kind: 7, content: '👀', tags: [['e', randomId()], ['e', visible.id]] });
    expect(await m.publish(sneaky)).toEqual([false, 'invalid: reaction target event not found']);
    expect(await stored(sneaky.id)).toBe(false);
    // Context naming nothing stored tells nothing and is kept, as clients copy thread tags.
    expect(await m.publish(lost)).toEqual([true, '']);
    // A member who reads both channels is held to one channel too: the reaction would show under the private message.
    const a = await connect(alice);
    const crossed = alice.sign({ kind: 7, content: '+', tags: [['e', secret.id], ['e', visible.id]] });
    expect(await a.publish(crossed)).toEqual([false, 'invalid: reaction target event not found']);
    const members = await a.req('under-secret', { kinds: [7], '#e': [secret.id] });
    expect(members.events.map((e) => e.id)).toEqual([]);
  });

  it('a deletion (5): both accepted as NIP-09 requests for nothing; the private message stays', async () => {
    const onHidden = mallory.sign({ kind: 5, tags: [['e', secret.id]] });
    const onMissing = mallory.sign({ kind: 5, tags: [['e', randomId()]] });
    expect(await m.publish(onHidden)).toEqual([true, '']);
    expect(await m.publish(onMissing)).toEqual([true, '']);
    expect(await liveOnBoth(secret.id)).toEqual([true, true]);
  });

  it('a group delete-event (9005) by the admin of another channel: both accepted, nothing deleted', async () => {
    const { hidden, missing } = await probe((t) => mallory.sign({ kind: 9005, tags: [['h', openChannel], ['e', t]] }));
    expect([hidden, missing]).toEqual([[true, ''], [true, '']]);
    expect(await liveOnBoth(secret.id)).toEqual([true, true]);
  });

  it('over POST /events: the same status and error for the hidden parent and the missing one', async () => {
    const url = `${fixture.relay.httpUrl}/events`;
    const post = async (ev: VerifiedEvent) => {
      const body = JSON.stringify(ev);
      const res = await fetch(url, { method: 'POST', headers: { authorization: nip98Header(mallory, url, body, undefined, true) }, body });
      return [res.status, await res.json()];
    };
    const hidden = mallory.sign({ kind: 9, content: 'http reply', tags: [['h', openChannel], ['e', secret.id, '', 'reply']] });
    const missing = mallory.sign({ kind: 9, content: 'http reply', tags: [['h', openChannel], ['e', randomId(), '', 'reply']] });
    expect(await post(hidden)).toEqual([400, { error: 'invalid: thread parent event not found' }]);
    expect(await post(missing)).toEqual([400, { error: 'invalid: thread parent event not found' }]);
    for (const ev of [hidden, missing]) expect(await stored(ev.id)).toBe(false);
  });
});

describe('what the writer may read or wrote is still named as before', () => {
  it('a reply, a reaction and an edit of a readable message are stored; a parent in another readable channel is named as such', async () => {
    const reply = mallory.sign({ kind: 9, content: 'hi alice', tags: [['h', openChannel], ['e', visible.id, '', 'reply']] });
    expect(await m.publish(reply)).toEqual([true, '']);
    expect(await m.publish(mallory.sign({ kind: 7, content: '+', tags: [['e', visible.id]] }))).toEqual([true, '']);
    const elsewhere = randomUUID();
    expect(await m.publish(mallory.sign({ kind: 9007, tags: [['h', elsewhere], ['name', 'other'], ['visibility', 'open']] }))).toEqual([true, '']);
    expect(await m.publish(mallory.sign({ kind: 9, content: 'wrong room', tags: [['h', elsewhere], ['e', visible.id, '', 'reply']] }))).toEqual([false, 'invalid: thread parent is in another channel']);
    expect(await m.publish(mallory.sign({ kind: 40003, content: 'not mine', tags: [['h', openChannel], ['e', visible.id]] }))).toEqual([false, 'restricted: only the author or its owner can edit a message']);
  });

  it('a member replies to, reacts to and deletes in the private channel; an author removed from it still edits and is told it is not a member', async () => {
    const a = await connect(alice);
    expect(await a.publish(alice.sign({ kind: 9, content: 'inside reply', tags: [['h', privateChannel], ['e', secret.id, '', 'reply']] }))).toEqual([true, '']);
    expect(await a.publish(alice.sign({ kind: 7, content: '🙂', tags: [['e', secret.id]] }))).toEqual([true, '']);
    const bob = newIdentity();
    const b = await connect(bob);
    expect(await a.publish(alice.sign({ kind: 9000, tags: [['h', privateChannel], ['p', bob.pubkey]] }))).toEqual([true, '']);
    const bobs = bob.sign({ kind: 9, content: 'bob inside', tags: [['h', privateChannel]] });
    expect(await b.publish(bobs)).toEqual([true, '']);
    expect(await a.publish(alice.sign({ kind: 9001, tags: [['h', privateChannel], ['p', bob.pubkey]] }))).toEqual([true, '']);
    // His own event: no oracle, so the answers name the channel as before.
    expect(await b.publish(bob.sign({ kind: 40003, content: 'bob edited', tags: [['h', privateChannel], ['e', bobs.id]] }))).toEqual([true, '']);
    expect(await b.publish(bob.sign({ kind: 5, tags: [['e', bobs.id]] }))).toEqual([false, 'restricted: not a channel member']);
    const del = alice.sign({ kind: 5, tags: [['e', secret.id]] });
    expect(await a.publish(del)).toEqual([true, '']);
    expect(await liveOnBoth(secret.id)).toEqual([false, false]);
  });
});
