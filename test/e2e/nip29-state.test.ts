/**
 * NIP-29 relay-signed group state (39000–39003) end to end: produced in the command's
 * transaction, signed by BUZZ_RELAY_PRIVATE_KEY, stored as addressable events (`d` = group id)
 * that REQ and the bridge read back, replaced on every change, fanned out live, and exactly as
 * visible as the channel.
 */
import { randomUUID } from 'node:crypto';
import { Pool } from 'pg';
import { getPublicKey, verifyEvent, type Event } from 'nostr-tools/pure';
import { httpRequest, Identity, newIdentity, RawClient, wire } from '../harness/nostr-clients.js';
import { relayEnv, RelayFixture, startRelayFixture } from '../harness/relay-fixture.js';
import { startRelay, type RelayProcess } from '../harness/relay-process.js';

const RELAY_SECRET = '7f'.repeat(32);
const RELAY_PUBKEY = getPublicKey(Buffer.from(RELAY_SECRET, 'hex'));
const STATE_KINDS = [39000, 39001, 39002, 39003];

let fixture: RelayFixture;
let relay: RelayProcess;
let writer: Pool;
const alice = newIdentity();
const bob = newIdentity();
const carol = newIdentity();
let a: RawClient;
let b: RawClient;
let c: RawClient;

beforeAll(async () => {
  fixture = await startRelayFixture({
    BUZZ_RELAY_PRIVATE_KEY: RELAY_SECRET,
    BUZZ_REQUIRE_AUTH_TOKEN: 'false', // the bridge reads use the X-Pubkey development header
    BUZZ_RATE_LIMIT_HUMAN_WS_EVENTS_PER_SEC: '100',
    BUZZ_RATE_LIMIT_HUMAN_MESSAGES_PER_MIN: '1000',
  });
  ({ relay, writer } = fixture);
  [a, b, c] = await Promise.all([alice, bob, carol].map((id) => RawClient.authed(relay.wsUrl, id)));
});

afterAll(async () => {
  for (const client of [a, b, c]) client?.close();
  await fixture?.close();
});

async function state(client: RawClient, channel: string, kinds = STATE_KINDS): Promise<Map<number, Event>> {
  const { events, end } = await client.req(`state-${randomUUID()}`, { kinds, '#d': [channel] });
  expect(end[0]).toBe('EOSE');
  const byKind = new Map<number, Event>();
  for (const ev of events) {
    expect(byKind.has(ev.kind)).toBe(false); // exactly one live version per coordinate
    byKind.set(ev.kind, ev);
  }
  return byKind;
}

function pTags(ev: Event | undefined): string[][] {
  return (ev?.tags ?? []).filter((t) => t[0] === 'p');
}

async function command(client: RawClient, id: Identity, kind: number, channel: string, tags: string[][] = []): Promise<void> {
  expect(await client.publish(id.sign({ kind, tags: [['h', channel], ...tags] }))).toEqual([true, '']);
}

describe('NIP-29 group state events', () => {
  const priv = randomUUID();

  it('a create publishes metadata, admins, members and roles, signed by the relay key', async () => {
    await command(a, alice, 9007, priv, [['name', 'secret'], ['about', 'plans'], ['visibility', 'private']]);
    const s = await state(a, priv);
    expect([...s.keys()].sort()).toEqual(STATE_KINDS);
    for (const ev of s.values()) {
      expect(verifyEvent(wire(ev))).toBe(true);
      expect(ev.pubkey).toBe(RELAY_PUBKEY);
      expect(ev.tags).toEqual(expect.arrayContaining([['d', priv], ['h', priv]]));
    }
    expect(s.get(39000)!.tags).toEqual(
      expect.arrayContaining([['name', 'secret'], ['about', 'plans'], ['private'], ['closed'], ['channel_type', 'stream']]),
    );
    expect(pTags(s.get(39001))).toEqual([['p', alice.pubkey, 'owner']]);
    expect(pTags(s.get(39002))).toEqual([['p', alice.pubkey]]);
    expect(s.get(39003)!.tags.filter((t) => t[0] === 'role').map((t) => t[1])).toEqual(['owner', 'admin', 'member', 'guest', 'bot']);
  });

  it('a private channel hides its state from non-members on REQ and on the bridge', async () => {
    expect((await state(b, priv)).size).toBe(0);
    const res = await httpRequest(`${relay.httpUrl}/query`, {
      method: 'POST',
      headers: { 'x-pubkey': bob.pubkey },
      body: JSON.stringify([{ kinds: [39000, 39002], '#d': [priv] }]),
    });
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body)).toEqual([]);
  });

  it('put-user replaces the member list in place, fans it out live and lets the new member read it', async () => {
    const sub = `live-${randomUUID()}`;
    const before = (await state(a, priv)).get(39002)!;
    a.send(['REQ', sub, { kinds: [39001, 39002], '#h': [priv] }]);
    await a.waitFor((f) => f[0] === 'EOSE' && f[1] === sub);
    const from = a.frames.length; // live frames only from here on
    await command(a, alice, 9000, priv, [['p', bob.pubkey, 'admin']]);

    const live = await a.waitFor((f) => f[0] === 'EVENT' && f[1] === sub && (f[2] as Event).kind === 39002, 5000, from);
    const members = live[2] as Event;
    expect(verifyEvent(wire(members))).toBe(true);
    expect(pTags(members).map((t) => t[1]).sort()).toEqual([alice.pubkey, bob.pubkey].sort());
    expect(members.created_at).toBeGreaterThan(before.created_at);

    const s = await state(b, priv); // bob is a member now
    expect(s.get(39002)!.id).toBe(members.id);
    expect(pTags(s.get(39001))).toEqual(expect.arrayContaining([['p', alice.pubkey, 'owner'], ['p', bob.pubkey, 'admin']]));
    const { rows } = await writer.query(`select count(*)::int as n from events where kind = 39002 and d_tag = $1 and deleted_at is null`, [priv]);
    expect(rows[0].n).toBe(1);
  });

  it('remove-user drops the member from the list and from the state it may read', async () => {
    await command(a, alice, 9001, priv, [['p', bob.pubkey]]);
    const s = await state(a, priv);
    expect(pTags(s.get(39002))).toEqual([['p', alice.pubkey]]);
    expect(pTags(s.get(39001))).toEqual([['p', alice.pubkey, 'owner']]);
    expect((await state(b, priv)).size).toBe(0);
  });

  it('edit-metadata replaces 39000, always newer than the version it replaces', async () => {
    const before = (await state(a, priv)).get(39000)!;
    await command(a, alice, 9002, priv, [['name', 'renamed'], ['archived']]);
    const after = (await state(a, priv)).get(39000)!;
    expect(after.created_at).toBeGreaterThan(before.created_at);
    expect(after.tags).toEqual(expect.arrayContaining([['name', 'renamed'], ['archived']]));
    // Only the metadata changed: members and roles keep their versions.
    expect((await state(a, priv, [39003])).get(39003)!.created_at).toBeLessThan(after.created_at);
  });

  it('an open channel shows its state to everyone, and join/leave refresh the members', async () => {
    const open = randomUUID();
    await command(a, alice, 9007, open, [['name', 'general']]);
    expect((await state(c, open)).get(39000)!.tags).toEqual(expect.arrayContaining([['public'], ['open']]));
    await command(c, carol, 9021, open);
    expect(pTags((await state(b, open)).get(39002)).map((t) => t[1])).toEqual([alice.pubkey, carol.pubkey]);
    await command(c, carol, 9022, open);
    expect(pTags((await state(b, open)).get(39002)).map((t) => t[1])).toEqual([alice.pubkey]);

    const res = await httpRequest(`${relay.httpUrl}/query`, {
      method: 'POST',
      headers: { 'x-pubkey': carol.pubkey },
      body: JSON.stringify([{ kinds: [39000], '#d': [open] }]),
    });
    const events = JSON.parse(res.body) as Event[];
    expect(events.map((e) => [e.kind, e.pubkey, verifyEvent(e)])).toEqual([[39000, RELAY_PUBKEY, true]]);
  });

  it('deleting the group retires its state events', async () => {
    const doomed = randomUUID();
    await command(a, alice, 9007, doomed, [['name', 'doomed']]);
    expect((await state(a, doomed)).size).toBe(4);
    await command(a, alice, 9008, doomed);
    expect((await state(a, doomed)).size).toBe(0);
    const { rows } = await writer.query(`select count(*)::int as n from events where kind between 39000 and 39003 and d_tag = $1 and deleted_at is null`, [doomed]);
    expect(rows[0].n).toBe(0);
  });

  it('clients cannot submit state events', async () => {
    const forged = alice.sign({ kind: 39002, tags: [['d', priv], ['h', priv], ['p', carol.pubkey]] });
    expect(await a.publish(forged)).toEqual([false, 'restricted: relay-only kind']);
  });
});

describe('NIP-11 with a stable relay key', () => {
  it('names the signing key as `pubkey` and `self`, and adds NIP-43 only where membership is enforced', async () => {
    const doc = async (url: string) => (await (await fetch(url, { headers: { accept: 'application/nostr+json' } })).json()) as { self?: string; pubkey?: string; supported_nips: number[] };
    const open = await doc(relay.httpUrl);
    expect([open.self, open.pubkey]).toEqual([RELAY_PUBKEY, RELAY_PUBKEY]);
    expect(open.supported_nips).not.toContain(43);
    const members = await startRelay(relayEnv(fixture.db, { BUZZ_RELAY_PRIVATE_KEY: RELAY_SECRET, BUZZ_REQUIRE_RELAY_MEMBERSHIP: 'true' }));
    try {
      const closed = await doc(members.httpUrl);
      expect(closed.self).toBe(RELAY_PUBKEY);
      expect(closed.supported_nips).toEqual([1, 2, 9, 10, 11, 16, 17, 23, 25, 29, 33, 38, 42, 43, 45, 50, 56]);
    } finally {
      await members.stop();
    }
  });
});
