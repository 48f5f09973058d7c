/**
 * NIP-29 commands as clients send them (issue 18 items 1, 3, 4): who may run 9000–9009
 * (channel owners/admins, RELAY_OWNER_PUBKEY, RELAY_OPERATOR_PUBKEYS, NIP-43 owners/admins),
 * the exact refusal for everyone else, invites (9009 → 9021 `code`), the relay-only kinds,
 * one-target deletions, UUID group ids, NIP-29's visibility tags, 44100/44101 notices, thread
 * counts that follow deletions and the live 39005. Every state change is read back on the writer
 * and on the streaming replica; stored / not stored is checked on the writer.
 */
import { channelIdOf } from '../../src/nostr/group-id.js';
import { randomUUID } from 'node:crypto';
import { Pool } from 'pg';
import { getPublicKey, verifyEvent, type Event, type VerifiedEvent } from 'nostr-tools/pure';
import { httpRequest, Identity, newIdentity, RawClient, wire } from '../harness/nostr-clients.js';
import { RelayFixture, startRelayFixture } from '../harness/relay-fixture.js';
import type { RelayProcess } from '../harness/relay-process.js';

const RELAY_SECRET = '6e'.repeat(32);
const RELAY_PUBKEY = getPublicKey(Buffer.from(RELAY_SECRET, 'hex'));
const ADMIN_REQUIRED = 'restricted: channel admin role required';
const OWNER_REQUIRED = 'restricted: channel owner role required';

let fixture: RelayFixture;
let relay: RelayProcess;
let writer: Pool;
let replica: Pool;
let communityId: string;

const owner = newIdentity(); // RELAY_OWNER_PUBKEY
const operator = newIdentity(); // RELAY_OPERATOR_PUBKEYS
const relayAdmin = newIdentity(); // relay_members role admin (NIP-43)
const alice = newIdentity(); // creates the channels (channel owner)
const bob = newIdentity();
const carol = newIdentity(); // plain member
const dave = newIdentity(); // channel admin
const erin = newIdentity();
const frank = newIdentity();
const clients = new Map<string, RawClient>();

beforeAll(async () => {
  fixture = await startRelayFixture({
    BUZZ_RELAY_PRIVATE_KEY: RELAY_SECRET,
    BUZZ_REQUIRE_AUTH_TOKEN: 'false',
    RELAY_OWNER_PUBKEY: owner.pubkey,
    RELAY_OPERATOR_PUBKEYS: operator.pubkey,
    BUZZ_RATE_LIMIT_HUMAN_WS_EVENTS_PER_SEC: '200',
    BUZZ_RATE_LIMIT_HUMAN_MESSAGES_PER_MIN: '5000',
  });
  ({ relay, writer } = fixture);
  replica = new Pool({ connectionString: fixture.db.readerUrl, max: 2 });
  replica.on('error', () => undefined);
  communityId = (await writer.query(`select id from communities where host = 'localhost'`)).rows[0].id;
  await writer.query(`insert into relay_members (community_id, pubkey, role) values ($1, $2, 'admin')`, [communityId, relayAdmin.pubkey]);
  for (const id of [owner, operator, relayAdmin, alice, bob, carol, dave, erin, frank]) clients.set(id.pubkey, await RawClient.authed(relay.wsUrl, id));
});

afterAll(async () => {
  for (const c of clients.values()) c.close();
  await replica?.end();
  await fixture?.close();
});

const client = (id: Identity) => clients.get(id.pubkey)!;
const publish = (id: Identity, ev: VerifiedEvent) => client(id).publish(ev);
const cmd = (id: Identity, kind: number, channel: string, tags: string[][] = [], content = '') => publish(id, id.sign({ kind, content, tags: [['h', channel], ...tags] }));

/** Runs `sql` on the writer and, once the replica replayed everything, on the replica: both answers. */
async function both<T>(text: string, params: unknown[]): Promise<[T[], T[]]> {
  const w = (await writer.query(text, params)).rows as T[];
  await fixture.db.waitForReplica();
  const r = (await replica.query(text, params)).rows as T[];
  return [w, r];
}

/** The member's role on writer and replica (`none` when not a current member); asserts they agree. */
async function roleOf(channel: string, pubkey: string): Promise<string> {
  const [w, r] = await both<{ role: string }>(`select role from channel_members where channel_id = $1 and pubkey = $2 and removed_at is null`, [channel, pubkey]);
  expect(r).toEqual(w);
  return w[0]?.role ?? 'none';
}

async function channelRow(channel: string): Promise<{ name: string; visibility: string; deleted: boolean } | undefined> {
  const [w, r] = await both<{ name: string; visibility: string; deleted: boolean }>(`select name, visibility, deleted_at is not null as deleted from channels where id = $1`, [channel]);
  expect(r).toEqual(w);
  return w[0];
}

async function stored(id: string): Promise<boolean> {
  const { rows } = await writer.query(`select 1 from events where id = $1`, [Buffer.from(id, 'hex')]);
  return rows.length > 0;
}

async function deleted(id: string): Promise<boolean> {
  const [w, r] = await both<{ deleted: boolean }>(`select deleted_at is not null as deleted from events where id = $1`, [Buffer.from(id, 'hex')]);
  expect(r).toEqual(w);
  return w[0].deleted;
}

async function newChannel(creator: Identity, tags: string[][] = [['name', 'c'], ['visibility', 'private']]): Promise<string> {
  const id = randomUUID();
  expect(await cmd(creator, 9007, id, tags)).toEqual([true, '']);
  return id;
}

describe('NIP-29 admin commands: who may run them', () => {
  let ch: string;

  beforeAll(async () => {
    ch = await newChannel(alice);
    expect(await cmd(alice, 9000, ch, [['p', carol.pubkey]])).toEqual([true, '']);
    expect(await cmd(alice, 9000, ch, [['p', dave.pubkey, 'admin']])).toEqual([true, '']);
  });

  it('a plain member gets the admin refusal for 9000, 9001, 9002, 9005 and 9009; nothing changes or is stored', async () => {
    const msg = carol.sign({ kind: 9, content: 'hi', tags: [['h', ch]] });
    expect(await publish(carol, msg)).toEqual([true, '']);
    const attempts = [
      carol.sign({ kind: 9000, tags: [['h', ch], ['p', bob.pubkey]] }),
      carol.sign({ kind: 9001, tags: [['h', ch], ['p', dave.pubkey]] }),
      carol.sign({ kind: 9002, tags: [['h', ch], ['name', 'mine']] }),
      carol.sign({ kind: 9005, tags: [['h', ch], ['e', msg.id]] }),
      carol.sign({ kind: 9009, tags: [['h', ch], ['code', 'sneaky-code-0001']] }),
    ];
    for (const ev of attempts) {
      expect(await publish(carol, ev)).toEqual([false, ADMIN_REQUIRED]);
      expect(await stored(ev.id)).toBe(false);
    }
    const del = carol.sign({ kind: 9008, tags: [['h', ch]] });
    expect(await publish(carol, del)).toEqual([false, OWNER_REQUIRED]);
    expect(await roleOf(ch, bob.pubkey)).toBe('none');
    expect(await roleOf(ch, dave.pubkey)).toBe('admin');
    expect(await channelRow(ch)).toMatchObject({ name: 'c', deleted: false });
    expect(await deleted(msg.id)).toBe(false);
    const [w] = await both(`select 1 from channel_invites where channel_id = $1`, [ch]);
    expect(w).toEqual([]);
  });

  it('a non-member gets the same refusal (not a membership error) in a private channel', async () => {
    expect(await cmd(frank, 9000, ch, [['p', frank.pubkey]])).toEqual([false, ADMIN_REQUIRED]);
    expect(await roleOf(ch, frank.pubkey)).toBe('none');
  });

  it('a channel admin manages members but cannot grant, change or remove an owner, nor delete the group', async () => {
    const add = dave.sign({ kind: 9000, tags: [['h', ch], ['p', bob.pubkey]] });
    expect(await publish(dave, add)).toEqual([true, '']);
    expect(await stored(add.id)).toBe(true);
    expect(await roleOf(ch, bob.pubkey)).toBe('member');
    expect(await cmd(dave, 9000, ch, [['p', bob.pubkey, 'owner']])).toEqual([false, OWNER_REQUIRED]);
    expect(await cmd(dave, 9000, ch, [['p', alice.pubkey, 'member']])).toEqual([false, OWNER_REQUIRED]);
    expect(await cmd(dave, 9001, ch, [['p', alice.pubkey]])).toEqual([false, OWNER_REQUIRED]);
    expect(await cmd(dave, 9008, ch)).toEqual([false, OWNER_REQUIRED]);
    expect(await roleOf(ch, bob.pubkey)).toBe('member');
    expect(await roleOf(ch, alice.pubkey)).toBe('owner');
    expect(await cmd(dave, 9001, ch, [['p', bob.pubkey]])).toEqual([true, '']);
    expect(await roleOf(ch, bob.pubkey)).toBe('none');
  });

  it('the channel owner may grant owner; a co-owner is its peer, so relay authority takes it back', async () => {
    expect(await cmd(alice, 9000, ch, [['p', dave.pubkey, 'owner']])).toEqual([true, '']);
    expect(await roleOf(ch, dave.pubkey)).toBe('owner');
    // Its own content: beforeAll sent the same tags, and within one second the same event id
    // would be a NIP-01 duplicate.
    expect(await cmd(alice, 9000, ch, [['p', dave.pubkey, 'admin']], 'back to admin')).toEqual([false, 'restricted: cannot act on a member of equal or higher rank']);
    expect(await cmd(owner, 9000, ch, [['p', dave.pubkey, 'admin']], 'back to admin')).toEqual([true, '']);
    expect(await roleOf(ch, dave.pubkey)).toBe('admin');
  });

  it.each([
    ['RELAY_OWNER_PUBKEY', owner],
    ['RELAY_OPERATOR_PUBKEYS', operator],
    ['a NIP-43 relay admin', relayAdmin],
  ])('%s runs every admin and owner command in a private channel it is not a member of', async (_who, actor) => {
    const target = await newChannel(alice);
    expect(await roleOf(target, actor.pubkey)).toBe('none');
    expect(await cmd(actor, 9000, target, [['p', erin.pubkey, 'owner']])).toEqual([true, '']);
    expect(await roleOf(target, erin.pubkey)).toBe('owner');
    expect(await cmd(actor, 9001, target, [['p', alice.pubkey]])).toEqual([true, '']);
    expect(await roleOf(target, alice.pubkey)).toBe('none');
    expect(await cmd(actor, 9002, target, [['name', 'taken over']])).toEqual([true, '']);
    expect(await channelRow(target)).toMatchObject({ name: 'taken over' });
    expect(await cmd(actor, 9009, target, [['code', `code-${randomUUID()}`]])).toEqual([true, '']);
    const gone = actor.sign({ kind: 9008, tags: [['h', target]] });
    expect(await publish(actor, gone)).toEqual([true, '']);
    expect(await stored(gone.id)).toBe(true);
    expect(await channelRow(target)).toMatchObject({ deleted: true });
  });
});

describe('NIP-29 invites (9009 → 9021 code)', () => {
  let ch: string;

  beforeAll(async () => {
    ch = await newChannel(alice);
  });

  it('an admin mints codes; each admits one person once to the private channel', async () => {
    const invite = alice.sign({ kind: 9009, tags: [['h', ch], ['code', 'welcome-one-0001'], ['code', 'welcome-two-0002']] });
    expect(await publish(alice, invite)).toEqual([true, '']);
    expect(await stored(invite.id)).toBe(true);
    const [w, r] = await both<{ code: string; used: boolean; days: number }>(
      `select code, used_at is not null as used, round(extract(epoch from expires_at - now()) / 86400)::int as days from channel_invites where channel_id = $1 order by code`,
      [ch],
    );
    expect(r).toEqual(w);
    expect(w).toEqual([{ code: 'welcome-one-0001', used: false, days: 7 }, { code: 'welcome-two-0002', used: false, days: 7 }]);

    expect(await cmd(erin, 9021, ch)).toEqual([false, 'restricted: channel is private']);
    expect(await cmd(erin, 9021, ch, [['code', 'wrong-code-00000']])).toEqual([false, 'restricted: invite code is invalid, already used or expired']);
    expect(await roleOf(ch, erin.pubkey)).toBe('none');
    const join = erin.sign({ kind: 9021, tags: [['h', ch], ['code', 'welcome-one-0001']] });
    expect(await publish(erin, join)).toEqual([true, '']);
    expect(await stored(join.id)).toBe(true);
    expect(await roleOf(ch, erin.pubkey)).toBe('member');
    const used = await both<{ used_by: string }>(`select used_by from channel_invites where channel_id = $1 and code = 'welcome-one-0001'`, [ch]);
    expect(used).toEqual([[{ used_by: erin.pubkey }], [{ used_by: erin.pubkey }]]);
    // Erin now reads the private channel.
    const { events } = await client(erin).req(`inv-${randomUUID()}`, { kinds: [39000], '#d': [ch] });
    expect(events).toHaveLength(1);

    // Spent: the same code admits nobody else; a second join is a duplicate.
    const reuse = frank.sign({ kind: 9021, tags: [['h', ch], ['code', 'welcome-one-0001']] });
    expect(await publish(frank, reuse)).toEqual([false, 'restricted: invite code is invalid, already used or expired']);
    expect(await stored(reuse.id)).toBe(false);
    expect(await roleOf(ch, frank.pubkey)).toBe('none');
    expect(await cmd(erin, 9021, ch, [['code', 'welcome-two-0002']])).toEqual([false, 'duplicate: already a channel member']);
    const [[left]] = await both<{ used: boolean }>(`select used_at is not null as used from channel_invites where channel_id = $1 and code = 'welcome-two-0002'`, [ch]);
    expect(left.used).toBe(false);
  });

  it('an expired code admits nobody', async () => {
    expect(await cmd(alice, 9009, ch, [['code', 'stale-code-00001']])).toEqual([true, '']);
    await writer.query(`update channel_invites set expires_at = now() - interval '1 second' where channel_id = $1 and code = 'stale-code-00001'`, [ch]);
    expect(await cmd(frank, 9021, ch, [['code', 'stale-code-00001']])).toEqual([false, 'restricted: invite code is invalid, already used or expired']);
    expect(await roleOf(ch, frank.pubkey)).toBe('none');
  });

  it('invites are bounded: code count, length, expiration, open codes per channel, duplicates', async () => {
    const now = Math.floor(Date.now() / 1000);
    const many = Array.from({ length: 11 }, (_, i) => ['code', `many-codes-${i}x`]);
    expect(await cmd(alice, 9009, ch, many)).toEqual([false, 'invalid: at most 10 code tags per invite']);
    expect(await cmd(alice, 9009, ch, [['code', 'x'.repeat(129)]])).toEqual([false, 'invalid: invite code must be 12 to 128 characters']);
    expect(await cmd(alice, 9009, ch, [['code', 'a']])).toEqual([false, 'invalid: invite code must be 12 to 128 characters']);
    expect(await cmd(alice, 9009, ch, [['code', 'eleven-char']])).toEqual([false, 'invalid: invite code must be 12 to 128 characters']);
    expect(await cmd(alice, 9009, ch, [['code', 'far-future-0001'], ['expiration', String(now + 31 * 86400)]])).toEqual([false, 'invalid: invite expiration at most 30 days ahead']);
    expect(await cmd(alice, 9009, ch, [['code', 'in-the-past-001'], ['expiration', String(now - 10)]])).toEqual([false, 'invalid: invite expiration must be a future unix time']);
    expect(await cmd(alice, 9009, ch, [['code', 'welcome-two-0002']])).toEqual([false, 'invalid: invite code already exists in this channel']);
    // A spent code may be minted again; a sooner NIP-40 expiration is kept.
    expect(await cmd(alice, 9009, ch, [['code', 'welcome-one-0001'], ['expiration', String(now + 3600)]])).toEqual([true, '']);
    const [[again]] = await both<{ used: boolean; hours: number }>(
      `select used_at is not null as used, round(extract(epoch from expires_at - now()) / 3600)::int as hours from channel_invites where channel_id = $1 and code = 'welcome-one-0001'`,
      [ch],
    );
    expect(again).toEqual({ used: false, hours: 1 });
    const { rows } = await writer.query(`select count(*)::int as n from channel_invites where channel_id = $1 and used_at is null and expires_at > now()`, [ch]);
    const room = 100 - rows[0].n;
    for (let i = 0; i < room; i += 10) {
      const batch = Array.from({ length: Math.min(10, room - i) }, (_, k) => ['code', `fill-code-${i + k}-xx`]);
      expect(await cmd(alice, 9009, ch, batch)).toEqual([true, '']);
    }
    expect(await cmd(alice, 9009, ch, [['code', 'one-too-many']])).toEqual([false, 'restricted: a channel holds at most 100 open invite codes']);
  });

  it('an open channel needs no code and does not spend one', async () => {
    const open = await newChannel(alice, [['name', 'open']]);
    expect(await cmd(alice, 9009, open, [['code', 'unused-code-0001']])).toEqual([true, '']);
    expect(await cmd(frank, 9021, open, [['code', 'unused-code-0001']])).toEqual([true, '']);
    expect(await roleOf(open, frank.pubkey)).toBe('member');
    const [[row]] = await both<{ used: boolean }>(`select used_at is not null as used from channel_invites where channel_id = $1`, [open]);
    expect(row.used).toBe(false);
  });
});

describe('relay-signed kinds are refused from clients', () => {
  it('44100/44101 get the membership-notification reason; 39000–39003 and 39005 are relay-only; none is stored', async () => {
    const ch = randomUUID();
    for (const kind of [44100, 44101]) {
      const forged = alice.sign({ kind, tags: [['p', bob.pubkey], ['h', ch]] });
      expect(await publish(alice, forged)).toEqual([false, 'invalid: membership notifications are relay-signed only']);
      expect(await stored(forged.id)).toBe(false);
    }
    for (const kind of [39000, 39001, 39002, 39003, 39005]) {
      const forged = alice.sign({ kind, tags: [['d', ch], ['h', ch]] });
      expect(await publish(alice, forged)).toEqual([false, 'restricted: relay-only kind']);
      expect(await stored(forged.id)).toBe(false);
    }
  });
});

describe('deletions take exactly one e or a target', () => {
  let ch: string;
  let msg: VerifiedEvent;

  beforeAll(async () => {
    ch = await newChannel(alice, [['name', 'del']]);
    msg = alice.sign({ kind: 9, content: 'x', tags: [['h', ch]] });
    expect(await publish(alice, msg)).toEqual([true, '']);
  });

  it.each([
    ['no target', [], 'invalid: deletion must have exactly one e or a target (got 0)'],
    ['an e and an a', [['e', '0'.repeat(64)], ['a', `30023:${'1'.repeat(64)}:x`]], 'invalid: deletion must have exactly one e or a target (got 2)'],
    ['a malformed e', [['e', 'nope']], 'invalid: deletion e tag must be a 64-hex event id'],
    ['a malformed a', [['a', 'nope']], 'invalid: deletion a tag must be <kind>:<pubkey>:<d>'],
  ])('kind 5 with %s is refused and not stored', async (_what, tags, reason) => {
    const del = alice.sign({ kind: 5, tags: tags as string[][] });
    expect(await publish(alice, del)).toEqual([false, reason]);
    expect(await stored(del.id)).toBe(false);
  });

  it('9005 with two targets or none is refused; with one, an admin deletes it on writer and replica', async () => {
    const two = alice.sign({ kind: 9005, tags: [['h', ch], ['e', msg.id], ['e', '0'.repeat(64)]] });
    expect(await publish(alice, two)).toEqual([false, 'invalid: deletion must have exactly one e or a target (got 2)']);
    expect(await cmd(alice, 9005, ch)).toEqual([false, 'invalid: deletion must have exactly one e or a target (got 0)']);
    expect(await stored(two.id)).toBe(false);
    expect(await deleted(msg.id)).toBe(false);
    const one = alice.sign({ kind: 9005, tags: [['h', ch], ['e', msg.id]] });
    expect(await publish(alice, one)).toEqual([true, '']);
    expect(await stored(one.id)).toBe(true);
    expect(await deleted(msg.id)).toBe(true);
  });

  it('kind 5 with an a target deletes the author’s addressable event', async () => {
    const article = alice.sign({ kind: 30023, content: 'long', tags: [['d', 'post']] });
    expect(await publish(alice, article)).toEqual([true, '']);
    expect(await publish(alice, alice.sign({ kind: 5, tags: [['a', `30023:${alice.pubkey}:post`]] }))).toEqual([true, '']);
    expect(await deleted(article.id)).toBe(true);
  });
});

describe('NIP-29 as clients speak it', () => {
  it.each([9000, 9001, 9002, 9005, 9007, 9008, 9009, 9021, 9022])('kind %i with an h that is no group id is refused, not stored as a global event', async (kind) => {
    const ev = alice.sign({ kind, tags: [['h', 'pizza lovers'], ['p', bob.pubkey], ['name', 'pizza']] });
    expect(await publish(alice, ev)).toEqual([false, 'invalid: group id (h tag) must be a UUID or 1 to 64 letters, digits, - and _']);
    expect(await stored(ev.id)).toBe(false);
  });

  it('a NIP-29 group id that is not a UUID (NDK\'s default, mixed case) is a channel: created, joined, posted to, read by #h, its state by #d', async () => {
    const group = `Pz${randomUUID().replaceAll('-', '').slice(0, 22)}`;
    const channelId = channelIdOf(group)!;
    expect(await cmd(alice, 9007, group, [['name', 'Pizza'], ['private']])).toEqual([true, '']);
    expect(await channelRow(channelId)).toEqual({ name: 'Pizza', visibility: 'private', deleted: false });
    expect(await cmd(alice, 9000, group, [['p', bob.pubkey]])).toEqual([true, '']);
    expect(await roleOf(channelId, bob.pubkey)).toBe('member');
    const post = bob.sign({ kind: 9, content: 'a slice for everyone', tags: [['h', group]] });
    expect(await publish(bob, post)).toEqual([true, '']);
    // Stored as signed, in the channel the id names.
    const [w] = await both<{ channel: string; tags: string[][] }>(`select channel_id::text as channel, tags from events where id = decode($1, 'hex')`, [post.id]);
    expect(w).toEqual([{ channel: channelId, tags: [['h', group]] }]);
    // Read by the id the client knows, history and live; and by the channel's UUID as well.
    const history = await client(bob).req(`h-${randomUUID()}`, { kinds: [9], '#h': [group] });
    expect(history.events.map((e) => e.id)).toEqual([post.id]);
    expect((await client(bob).req(`u-${randomUUID()}`, { kinds: [9], '#h': [channelId] })).events.map((e) => e.id)).toEqual([post.id]);
    const sub = `live-${randomUUID()}`;
    client(bob).send(['REQ', sub, { kinds: [9], '#h': [group], limit: 0 }]);
    await client(bob).waitFor((f) => f[0] === 'EOSE' && f[1] === sub);
    const from = client(bob).frames.length;
    const live = alice.sign({ kind: 9, content: 'more pizza', tags: [['h', group]] });
    expect(await publish(alice, live)).toEqual([true, '']);
    expect((await client(bob).waitFor((f) => f[0] === 'EVENT' && f[1] === sub, 5000, from))[2]).toMatchObject({ id: live.id });
    client(bob).send(['CLOSE', sub]);
    // The relay's state names the group by its id, as a NIP-29 client looks it up.
    const state = await client(bob).req(`s-${randomUUID()}`, { kinds: [39000, 39002], '#d': [group] });
    expect(state.events.map((e) => [e.kind, e.pubkey, e.tags[0], e.tags[1]]).sort()).toEqual([
      [39000, RELAY_PUBKEY, ['d', group], ['h', group]],
      [39002, RELAY_PUBKEY, ['d', group], ['h', group]],
    ]);
    expect(state.events.find((e) => e.kind === 39002)!.tags).toEqual(expect.arrayContaining([['p', bob.pubkey]]));
    // Not a member: the group is private.
    expect(await publish(carol, carol.sign({ kind: 9, content: 'let me in', tags: [['h', group]] }))).toEqual([false, expect.stringMatching(/^restricted: /)]);
    // Another id, even one differing only in case, is another group.
    expect(await publish(bob, bob.sign({ kind: 9, content: 'wrong case', tags: [['h', group.toLowerCase()]] }))).toEqual([false, expect.stringMatching(/^restricted: /)]);
  });

  it('9007 without an h tag is refused', async () => {
    const ev = alice.sign({ kind: 9007, tags: [['name', 'nowhere']] });
    expect(await publish(alice, ev)).toEqual([false, 'invalid: channel-scoped events must include an h tag']);
    expect(await stored(ev.id)).toBe(false);
  });

  it('9007 without a name creates the channel named after its id; 9002 names it', async () => {
    const ch = randomUUID();
    expect(await cmd(alice, 9007, ch)).toEqual([true, '']);
    expect(await channelRow(ch)).toEqual({ name: ch, visibility: 'open', deleted: false });
    expect(await cmd(alice, 9007, randomUUID(), [['name', '  ']])).toEqual([false, 'invalid: channel name must not be empty']);
    expect(await cmd(alice, 9002, ch, [['name', 'Pizza Lovers']])).toEqual([true, '']);
    expect(await channelRow(ch)).toMatchObject({ name: 'Pizza Lovers' });
    const { events } = await client(bob).req(`meta-${randomUUID()}`, { kinds: [39000], '#d': [ch] });
    expect(events.map((e) => e.tags.find((t) => t[0] === 'name'))).toEqual([['name', 'Pizza Lovers']]);
  });

  it("9007 and 9002 take NIP-29's private/public/closed/open tags as well as the visibility tag", async () => {
    const ch = await newChannel(alice, [['private'], ['closed']]);
    expect(await channelRow(ch)).toMatchObject({ visibility: 'private' });
    const steps: Array<[string[][], string]> = [
      [[['public'], ['open']], 'open'],
      [[['private']], 'private'],
      [[['open']], 'open'],
      [[['closed']], 'private'],
      [[['public']], 'open'],
      [[['public'], ['closed']], 'private'], // mixed: the restrictive side wins
      [[['visibility', 'open'], ['private']], 'open'], // the spec's explicit form wins
    ];
    for (const [tags, visibility] of steps) {
      expect(await cmd(alice, 9002, ch, tags)).toEqual([true, '']);
      expect(await channelRow(ch)).toMatchObject({ visibility });
    }
    const { events } = await client(bob).req(`meta-${randomUUID()}`, { kinds: [39000], '#d': [ch] });
    expect(events[0].tags).toEqual(expect.arrayContaining([['public'], ['open']]));
  });
});

describe('44100 / 44101 membership notices', () => {
  it('an add to a private channel sends the added person a relay-signed 44100, a removal a 44101; only they read them', async () => {
    const ch = await newChannel(alice);
    const bobClient = client(bob);
    const sub = `notices-${randomUUID()}`;
    bobClient.send(['REQ', sub, { kinds: [44100, 44101], '#p': [bob.pubkey] }]);
    await bobClient.waitFor((f) => f[0] === 'EOSE' && f[1] === sub);
    const from = bobClient.frames.length;

    expect(await cmd(alice, 9000, ch, [['p', bob.pubkey]])).toEqual([true, '']);
    const added = (await bobClient.waitFor((f) => f[0] === 'EVENT' && f[1] === sub && (f[2] as Event).kind === 44100, 5000, from))[2] as Event;
    expect(verifyEvent(wire(added))).toBe(true);
    expect(added.pubkey).toBe(RELAY_PUBKEY);
    expect(added.tags).toEqual([['p', bob.pubkey], ['h', ch]]);

    expect(await cmd(alice, 9001, ch, [['p', bob.pubkey]])).toEqual([true, '']);
    const removed = (await bobClient.waitFor((f) => f[0] === 'EVENT' && f[1] === sub && (f[2] as Event).kind === 44101, 5000, from))[2] as Event;
    expect(removed.pubkey).toBe(RELAY_PUBKEY);
    expect(removed.tags).toEqual([['p', bob.pubkey], ['h', ch]]);

    // Stored globally (no channel), so the removed member still reads both; on writer and replica.
    const [w, r] = await both<{ kind: number; channel_id: string | null }>(
      `select kind, channel_id from events where id = any($1) order by kind`,
      [[Buffer.from(added.id, 'hex'), Buffer.from(removed.id, 'hex')]],
    );
    expect(r).toEqual(w);
    expect(w).toEqual([{ kind: 44100, channel_id: null }, { kind: 44101, channel_id: null }]);
    const history = await bobClient.req(`n-${randomUUID()}`, { kinds: [44100, 44101], '#p': [bob.pubkey] });
    expect(history.events.map((e) => e.id)).toEqual(expect.arrayContaining([added.id, removed.id]));
    const snoop = await client(carol).req(`snoop-${randomUUID()}`, { ids: [added.id, removed.id] });
    expect(snoop.events).toEqual([]);
  });

  it('an open channel, a role change and a no-op removal send no notice', async () => {
    const open = await newChannel(alice, [['name', 'open']]);
    const priv = await newChannel(alice);
    expect(await cmd(alice, 9000, open, [['p', frank.pubkey]])).toEqual([true, '']);
    expect(await cmd(alice, 9000, priv, [['p', frank.pubkey]])).toEqual([true, '']);
    expect(await cmd(alice, 9000, priv, [['p', frank.pubkey, 'admin']])).toEqual([true, '']);
    expect(await cmd(alice, 9001, priv, [['p', erin.pubkey]])).toEqual([true, '']);
    const { rows } = await writer.query(
      `select kind, tags->1->>1 as channel from events where kind in (44100, 44101) and pubkey = decode($1, 'hex') and tags @> $2::jsonb order by created_at`,
      [RELAY_PUBKEY, JSON.stringify([['p', frank.pubkey]])],
    );
    expect(rows).toEqual([{ kind: 44100, channel: priv }]);
    const { rows: erins } = await writer.query(`select 1 from events where kind = 44101 and tags @> $1::jsonb`, [JSON.stringify([['h', priv]])]);
    expect(erins).toEqual([]);
  });

  it('a private channel that took 20 wrong invite codes refuses code joins for the window, a valid code included; other channels are not affected', async () => {
    const locked = await newChannel(alice);
    const other = await newChannel(alice);
    expect(await cmd(alice, 9009, locked, [['code', 'locked-valid-0001']])).toEqual([true, '']);
    expect(await cmd(alice, 9009, other, [['code', 'other-valid-00001']])).toEqual([true, '']);
    // Keys are free: the guesses come from several keys, and the bound is the channel's.
    const guessers = [bob, erin, carol, dave];
    for (let i = 0; i < 20; i++) {
      expect(await cmd(guessers[i % guessers.length], 9021, locked, [['code', `guess-${i}-${randomUUID()}`]])).toEqual([false, 'restricted: invite code is invalid, already used or expired']);
    }
    expect(await cmd(frank, 9021, locked, [['code', 'locked-valid-0001']])).toEqual([false, 'rate-limited: too many failed invite codes for this channel, retry later']);
    expect(await roleOf(locked, frank.pubkey)).toBe('none');
    expect(await cmd(frank, 9021, other, [['code', 'other-valid-00001']])).toEqual([true, '']);
    expect(await roleOf(other, frank.pubkey)).toBe('member');
  });

  it('joining a private channel with an invite code sends a 44100, leaving it (9022) a 44101; leaving an open one sends none', async () => {
    const priv = await newChannel(alice);
    const open = await newChannel(alice, [['name', 'open-leave']]);
    expect(await cmd(alice, 9009, priv, [['code', 'frank-only-0001']])).toEqual([true, '']);
    expect(await cmd(frank, 9021, priv, [['code', 'frank-only-0001']])).toEqual([true, '']);
    expect(await cmd(frank, 9022, priv)).toEqual([true, '']);
    expect(await cmd(frank, 9021, open)).toEqual([true, '']);
    expect(await cmd(frank, 9022, open)).toEqual([true, '']);
    const { rows } = await writer.query(
      `select kind, tags->1->>1 as channel from events where kind in (44100, 44101) and pubkey = decode($1, 'hex') and tags @> $2::jsonb and tags->1->>1 = any($3) order by kind`,
      [RELAY_PUBKEY, JSON.stringify([['p', frank.pubkey]]), [priv, open]],
    );
    expect(rows).toEqual([
      { kind: 44100, channel: priv },
      { kind: 44101, channel: priv },
    ]);
  });
});

describe('thread counts and the live 39005', () => {
  it('a new reply fans out a relay-signed 39005 for its root; deleting replies lowers the counts on writer and replica', async () => {
    const ch = await newChannel(alice, [['name', 'threads']]);
    const root = alice.sign({ kind: 9, content: 'root', tags: [['h', ch]] });
    expect(await publish(alice, root)).toEqual([true, '']);
    const a = client(alice);
    const sub = `summary-${randomUUID()}`;
    a.send(['REQ', sub, { kinds: [39005], '#h': [ch] }]);
    await a.waitFor((f) => f[0] === 'EOSE' && f[1] === sub);
    const summaryAfter = async (from: number, descendants: number) => {
      const f = await a.waitFor((fr) => fr[0] === 'EVENT' && fr[1] === sub && JSON.parse((fr[2] as Event).content).descendant_count === descendants, 5000, from);
      return f[2] as Event;
    };

    let from = a.frames.length;
    const r1 = bob.sign({ kind: 9, content: 'one', tags: [['h', ch], ['e', root.id, '', 'root']] });
    expect(await publish(bob, r1)).toEqual([true, '']);
    const s1 = await summaryAfter(from, 1);
    expect(verifyEvent(wire(s1))).toBe(true);
    expect(s1.pubkey).toBe(RELAY_PUBKEY);
    expect(s1.tags).toEqual([['e', root.id], ['d', root.id], ['h', ch]]);
    expect(JSON.parse(s1.content)).toMatchObject({ reply_count: 1, descendant_count: 1, participants: [bob.pubkey] });

    from = a.frames.length;
    const r2 = carol.sign({ kind: 9, content: 'two', tags: [['h', ch], ['e', root.id, '', 'root'], ['e', r1.id, '', 'reply']] });
    expect(await publish(carol, r2)).toEqual([true, '']);
    expect(JSON.parse((await summaryAfter(from, 2)).content)).toMatchObject({ reply_count: 1, descendant_count: 2 });
    const r3 = carol.sign({ kind: 9, content: 'three', tags: [['h', ch], ['e', root.id, '', 'root']] });
    expect(await publish(carol, r3)).toEqual([true, '']);

    const counts = async (id: string) => {
      const [w, r] = await both<{ reply_count: number; descendant_count: number }>(
        `select reply_count, descendant_count from thread_metadata where event_id = $1`,
        [Buffer.from(id, 'hex')],
      );
      expect(r).toEqual(w);
      return w[0];
    };
    expect(await counts(root.id)).toEqual({ reply_count: 2, descendant_count: 3 });
    expect(await counts(r1.id)).toEqual({ reply_count: 1, descendant_count: 0 });

    // The author's NIP-09 deletion of a nested reply lowers its parent's and the root's counts.
    from = a.frames.length;
    expect(await publish(carol, carol.sign({ kind: 5, tags: [['e', r2.id]] }))).toEqual([true, '']);
    expect(JSON.parse((await summaryAfter(from, 2)).content)).toMatchObject({ reply_count: 2, descendant_count: 2 });
    expect(await counts(root.id)).toEqual({ reply_count: 2, descendant_count: 2 });
    expect(await counts(r1.id)).toEqual({ reply_count: 0, descendant_count: 0 });
    // Deleting it again changes nothing.
    expect(await publish(carol, carol.sign({ kind: 5, tags: [['e', r2.id]], created_at: Math.floor(Date.now() / 1000) + 1 }))).toEqual([true, '']);
    expect(await counts(root.id)).toEqual({ reply_count: 2, descendant_count: 2 });

    // An admin's 9005 of a direct reply lowers both counts of the root.
    from = a.frames.length;
    expect(await cmd(alice, 9005, ch, [['e', r3.id]])).toEqual([true, '']);
    expect(JSON.parse((await summaryAfter(from, 1)).content)).toMatchObject({ reply_count: 1, descendant_count: 1 });
    expect(await counts(root.id)).toEqual({ reply_count: 1, descendant_count: 1 });

    // The bridge's summary agrees, and 39005 is never stored.
    const res = await httpRequest(`${relay.httpUrl}/query`, {
      method: 'POST',
      headers: { 'x-pubkey': alice.pubkey },
      body: JSON.stringify([{ top_level: true, '#h': [ch], limit: 10, include_summaries: true }]),
    });
    expect(res.status).toBe(200);
    const overlays = (JSON.parse(res.body) as Event[]).filter((e) => e.kind === 39005);
    expect(overlays.map((e) => JSON.parse(e.content))).toEqual([expect.objectContaining({ reply_count: 1, descendant_count: 1 })]);
    const { rows } = await writer.query(`select count(*)::int as n from events where kind = 39005`);
    expect(rows[0].n).toBe(0);
  });
});
