/**
 * Channel eviction (relay.md §2.9): when a pubkey loses a channel (removed, left, the channel made
 * private or deleted), its live subscriptions authorised for that channel are retired with a
 * terminal `CLOSED "restricted: not a channel member"`; its other subscriptions, and other
 * members' subscriptions, stay live.
 */
import { randomUUID } from 'node:crypto';
import { Identity, newIdentity, RawClient } from '../harness/nostr-clients.js';
import { RelayFixture, startRelayFixture } from '../harness/relay-fixture.js';

let fixture: RelayFixture;
const alice = newIdentity();
const bob = newIdentity();
const carol = newIdentity();
const clients: RawClient[] = [];

beforeAll(async () => {
  fixture = await startRelayFixture({ BUZZ_RATE_LIMIT_HUMAN_WS_EVENTS_PER_SEC: '100', BUZZ_RATE_LIMIT_HUMAN_MESSAGES_PER_MIN: '1000' });
});

afterAll(async () => {
  for (const c of clients) c.close();
  await fixture?.close();
});

async function connect(id: Identity): Promise<RawClient> {
  const c = await RawClient.authed(fixture.relay.wsUrl, id);
  clients.push(c);
  return c;
}

/** A channel owned by alice with bob and carol as members; visibility as given. */
async function channelWithMembers(a: RawClient, visibility: 'open' | 'private'): Promise<string> {
  const channel = randomUUID();
  expect(await a.publish(alice.sign({ kind: 9007, tags: [['h', channel], ['name', 'evict'], ['visibility', visibility]] }))).toEqual([true, '']);
  for (const member of [bob, carol]) {
    expect(await a.publish(alice.sign({ kind: 9000, tags: [['h', channel], ['p', member.pubkey]] }))).toEqual([true, '']);
  }
  return channel;
}

const NOT_A_MEMBER = 'restricted: not a channel member';

describe('channel eviction', () => {
  it('closes a removed member’s channel subscription and keeps everything else live', async () => {
    const [a, b, c] = await Promise.all([alice, bob, carol].map(connect));
    const channel = await channelWithMembers(a, 'private');
    expect((await b.req('room', { kinds: [9], '#h': [channel] })).end).toEqual(['EOSE', 'room']);
    expect((await b.req('notes', { kinds: [1] })).end).toEqual(['EOSE', 'notes']);
    expect((await c.req('room', { kinds: [9], '#h': [channel] })).end).toEqual(['EOSE', 'room']);
    const from = b.frames.length;

    expect(await a.publish(alice.sign({ kind: 9001, tags: [['h', channel], ['p', bob.pubkey]] }))).toEqual([true, '']);
    expect(await b.waitFor((f) => f[0] === 'CLOSED' && f[1] === 'room', 5000, from)).toEqual(['CLOSED', 'room', NOT_A_MEMBER]);

    // Carol's subscription and Bob's global one still receive; Bob's channel one does not.
    const secret = alice.sign({ kind: 9, content: 'after bob left', tags: [['h', channel]] });
    expect(await a.publish(secret)).toEqual([true, '']);
    await c.waitFor((f) => f[0] === 'EVENT' && f[1] === 'room' && (f[2] as { id: string }).id === secret.id);
    const note = bob.sign({ kind: 1, content: 'bob still here' });
    expect(await b.publish(note)).toEqual([true, '']);
    await b.waitFor((f) => f[0] === 'EVENT' && f[1] === 'notes' && (f[2] as { id: string }).id === note.id, 5000, from);
    expect(b.frames.slice(from).filter((f) => f[0] === 'EVENT' && f[1] === 'room')).toEqual([]);
  });

  it('closes a member’s subscription when they leave, and everyone’s when the channel is deleted', async () => {
    const [a, b, c] = await Promise.all([alice, bob, carol].map(connect));
    const channel = await channelWithMembers(a, 'private');
    expect((await b.req('room', { '#h': [channel], kinds: [9] })).end[0]).toBe('EOSE');
    expect((await c.req('room', { '#h': [channel], kinds: [9] })).end[0]).toBe('EOSE');
    const fromB = b.frames.length;
    expect(await b.publish(bob.sign({ kind: 9022, tags: [['h', channel]] }))).toEqual([true, '']);
    expect(await b.waitFor((f) => f[0] === 'CLOSED' && f[1] === 'room', 5000, fromB)).toEqual(['CLOSED', 'room', NOT_A_MEMBER]);

    const fromC = c.frames.length;
    expect(await a.publish(alice.sign({ kind: 9008, tags: [['h', channel]] }))).toEqual([true, '']);
    expect(await c.waitFor((f) => f[0] === 'CLOSED' && f[1] === 'room', 5000, fromC)).toEqual(['CLOSED', 'room', NOT_A_MEMBER]);
  });

  it('leaves subscriptions alone when a removal does not take read access (open channel)', async () => {
    const [a, b] = await Promise.all([alice, bob].map(connect));
    const channel = await channelWithMembers(a, 'open');
    expect((await b.req('room', { '#h': [channel], kinds: [9] })).end[0]).toBe('EOSE');
    expect(await a.publish(alice.sign({ kind: 9001, tags: [['h', channel], ['p', bob.pubkey]] }))).toEqual([true, '']);
    const still = alice.sign({ kind: 9, content: 'open to all', tags: [['h', channel]] });
    expect(await a.publish(still)).toEqual([true, '']);
    await b.waitFor((f) => f[0] === 'EVENT' && f[1] === 'room' && (f[2] as { id: string }).id === still.id);
    expect(b.frames.filter((f) => f[0] === 'CLOSED' && f[1] === 'room')).toEqual([]);
  });
});
