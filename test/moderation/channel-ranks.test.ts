/**
 * One rank rule for channel commands (NIP-29 9000–9009) and relay moderation (9040–9044), on the
 * real writer + replica pair (docs/moderation.md, "Ranks"): relay owner > relay admin > channel
 * owner > channel admin > member. A command acts only on a key of lower rank; relay-wide authority
 * reaches a channel only where it outranks every owner of the channel. Every state change is read
 * back on the writer and on the streaming replica.
 */
import { randomUUID } from 'node:crypto';
import { Pool } from 'pg';
import type { VerifiedEvent } from 'nostr-tools/pure';
import { Identity, newIdentity, RawClient } from '../harness/nostr-clients.js';
import { RelayFixture, startRelayFixture } from '../harness/relay-fixture.js';

const ADMIN_REQUIRED = 'restricted: channel admin role required';
const OWNER_REQUIRED = 'restricted: channel owner role required';
const HIGHER_RANK = 'restricted: cannot act on a member of equal or higher rank';
const RELAY_HIGHER_RANK = 'restricted: cannot moderate a relay owner, operator or admin of equal or higher rank';

let fixture: RelayFixture;
let replica: Pool;
let communityId: string;

const owner = newIdentity(); // RELAY_OWNER_PUBKEY
const operator = newIdentity(); // RELAY_OPERATOR_PUBKEYS
const relayAdmin = newIdentity(); // relay_members role admin
const relayAdmin2 = newIdentity(); // another relay admin
const alice = newIdentity(); // a plain member who owns channels
const dave = newIdentity();
const erin = newIdentity();
const clients = new Map<string, RawClient>();

beforeAll(async () => {
  fixture = await startRelayFixture({
    BUZZ_REQUIRE_AUTH_TOKEN: 'false',
    RELAY_OWNER_PUBKEY: owner.pubkey,
    RELAY_OPERATOR_PUBKEYS: operator.pubkey,
    BUZZ_RATE_LIMIT_HUMAN_WS_EVENTS_PER_SEC: '200',
    BUZZ_RATE_LIMIT_HUMAN_MESSAGES_PER_MIN: '5000',
  });
  replica = new Pool({ connectionString: fixture.db.readerUrl, max: 2 });
  replica.on('error', () => undefined);
  communityId = (await fixture.writer.query(`select id from communities where host = 'localhost'`)).rows[0].id;
  for (const a of [relayAdmin, relayAdmin2]) await fixture.writer.query(`insert into relay_members (community_id, pubkey, role) values ($1, $2, 'admin')`, [communityId, a.pubkey]);
  for (const id of [owner, operator, relayAdmin, relayAdmin2, alice, dave, erin]) clients.set(id.pubkey, await RawClient.authed(fixture.relay.wsUrl, id));
});

afterAll(async () => {
  for (const c of clients.values()) c.close();
  await replica?.end();
  await fixture?.close();
});

const publish = (id: Identity, ev: VerifiedEvent) => clients.get(id.pubkey)!.publish(ev);
let seq = 0;
/** A channel command; its content is unique so that two equal commands in one second are two events. */
const cmd = (id: Identity, kind: number, channel: string, tags: string[][] = []) => publish(id, id.sign({ kind, content: String(seq++), tags: [['h', channel], ...tags] }));

async function both<T>(text: string, params: unknown[]): Promise<T[]> {
  const w = (await fixture.writer.query(text, params)).rows as T[];
  await fixture.db.waitForReplica();
  const r = (await replica.query(text, params)).rows as T[];
  expect(r).toEqual(w);
  return w;
}

/** Every current member's role, on writer and replica (asserted equal), as `pubkey → role`. */
async function members(channel: string): Promise<Record<string, string>> {
  const rows = await both<{ pubkey: string; role: string }>(`select pubkey, role from channel_members where channel_id = $1 and removed_at is null order by pubkey`, [channel]);
  return Object.fromEntries(rows.map((r) => [r.pubkey, r.role]));
}

async function channelRow(channel: string): Promise<{ name: string; visibility: string; deleted: boolean }> {
  return (await both<{ name: string; visibility: string; deleted: boolean }>(`select name, visibility, deleted_at is not null as deleted from channels where id = $1`, [channel]))[0];
}

async function newChannel(creator: Identity, visibility = 'private'): Promise<string> {
  const id = randomUUID();
  expect(await cmd(creator, 9007, id, [['name', 'c'], ['visibility', visibility]])).toEqual([true, '']);
  return id;
}

describe("relay-wide authority does not reach a higher rank's channel", () => {
  it("a relay admin can neither join, take over, demote, remove, edit, invite to nor delete the relay owner's private channel", async () => {
    const ch = await newChannel(owner);
    const secret = owner.sign({ kind: 9, content: 'owner only', tags: [['h', ch]] });
    expect(await publish(owner, secret)).toEqual([true, '']);
    const before = await members(ch);
    expect(before).toEqual({ [owner.pubkey]: 'owner' });
    expect(await cmd(relayAdmin, 9000, ch, [['p', relayAdmin.pubkey, 'owner']])).toEqual([false, ADMIN_REQUIRED]);
    expect(await cmd(relayAdmin, 9000, ch, [['p', relayAdmin.pubkey]])).toEqual([false, ADMIN_REQUIRED]);
    expect(await cmd(relayAdmin, 9000, ch, [['p', owner.pubkey, 'member']])).toEqual([false, ADMIN_REQUIRED]);
    expect(await cmd(relayAdmin, 9001, ch, [['p', owner.pubkey]])).toEqual([false, ADMIN_REQUIRED]);
    expect(await cmd(relayAdmin, 9002, ch, [['visibility', 'open']])).toEqual([false, ADMIN_REQUIRED]);
    expect(await cmd(relayAdmin, 9009, ch, [['code', `c-${randomUUID()}`]])).toEqual([false, ADMIN_REQUIRED]);
    expect(await cmd(relayAdmin, 9005, ch, [['e', secret.id]])).toEqual([false, ADMIN_REQUIRED]);
    expect(await cmd(relayAdmin, 9008, ch)).toEqual([false, OWNER_REQUIRED]);
    expect(await members(ch)).toEqual(before);
    expect(await channelRow(ch)).toEqual({ name: 'c', visibility: 'private', deleted: false });
    expect(await both(`select 1 from channel_invites where channel_id = $1`, [ch])).toEqual([]);
    expect(await both(`select deleted_at is null as live from events where id = $1`, [Buffer.from(secret.id, 'hex')])).toEqual([{ live: true }]);
  });

  it("made a channel admin there by the owner, a relay admin still cannot demote or remove the owner", async () => {
    const ch = await newChannel(owner);
    expect(await cmd(owner, 9000, ch, [['p', relayAdmin.pubkey, 'admin']])).toEqual([true, '']);
    expect(await cmd(relayAdmin, 9000, ch, [['p', owner.pubkey, 'member']])).toEqual([false, OWNER_REQUIRED]);
    expect(await cmd(relayAdmin, 9001, ch, [['p', owner.pubkey]])).toEqual([false, OWNER_REQUIRED]);
    expect(await cmd(relayAdmin, 9008, ch)).toEqual([false, OWNER_REQUIRED]);
    expect(await members(ch)).toEqual({ [owner.pubkey]: 'owner', [relayAdmin.pubkey]: 'admin' });
    // What the owner granted it may still do: manage members.
    expect(await cmd(relayAdmin, 9000, ch, [['p', erin.pubkey]])).toEqual([true, '']);
    expect(await cmd(relayAdmin, 9001, ch, [['p', erin.pubkey]])).toEqual([true, '']);
  });

  it("peers: a relay admin cannot administer another relay admin's channel, nor an operator the owner's", async () => {
    const admins = await newChannel(relayAdmin2);
    expect(await cmd(relayAdmin, 9000, admins, [['p', relayAdmin.pubkey, 'owner']])).toEqual([false, ADMIN_REQUIRED]);
    expect(await cmd(relayAdmin, 9008, admins)).toEqual([false, OWNER_REQUIRED]);
    const owners = await newChannel(owner);
    expect(await cmd(operator, 9001, owners, [['p', owner.pubkey]])).toEqual([false, ADMIN_REQUIRED]);
    expect(await cmd(operator, 9008, owners)).toEqual([false, OWNER_REQUIRED]);
    expect(await members(admins)).toEqual({ [relayAdmin2.pubkey]: 'owner' });
    expect(await members(owners)).toEqual({ [owner.pubkey]: 'owner' });
  });

  it('the relay owner administers a relay admin\'s channel: it outranks it', async () => {
    const ch = await newChannel(relayAdmin);
    expect(await cmd(owner, 9000, ch, [['p', owner.pubkey, 'owner']])).toEqual([true, '']);
    expect(await cmd(owner, 9000, ch, [['p', relayAdmin.pubkey, 'member']])).toEqual([true, '']);
    expect(await cmd(owner, 9001, ch, [['p', relayAdmin.pubkey]])).toEqual([true, '']);
    expect(await members(ch)).toEqual({ [owner.pubkey]: 'owner' });
    expect(await cmd(owner, 9008, ch)).toEqual([true, '']);
    expect(await channelRow(ch)).toMatchObject({ deleted: true });
  });

  it("a relay admin takes over a member's channel: makes itself owner, demotes and removes the channel owner, deletes it", async () => {
    const ch = await newChannel(alice);
    expect(await cmd(relayAdmin, 9000, ch, [['p', relayAdmin.pubkey, 'owner']])).toEqual([true, '']);
    expect(await cmd(relayAdmin, 9000, ch, [['p', alice.pubkey, 'member']])).toEqual([true, '']);
    expect(await members(ch)).toEqual({ [alice.pubkey]: 'member', [relayAdmin.pubkey]: 'owner' });
    expect(await cmd(relayAdmin, 9001, ch, [['p', alice.pubkey]])).toEqual([true, '']);
    expect(await cmd(relayAdmin, 9008, ch)).toEqual([true, '']);
    expect(await channelRow(ch)).toMatchObject({ deleted: true });
  });
});

describe('inside a channel: act only on a lower rank', () => {
  it('co-owners are peers: neither demotes nor removes the other; a relay admin can', async () => {
    const ch = await newChannel(alice);
    expect(await cmd(alice, 9000, ch, [['p', dave.pubkey, 'owner']])).toEqual([true, '']);
    expect(await cmd(alice, 9000, ch, [['p', dave.pubkey, 'admin']])).toEqual([false, HIGHER_RANK]);
    expect(await cmd(alice, 9001, ch, [['p', dave.pubkey]])).toEqual([false, HIGHER_RANK]);
    expect(await cmd(dave, 9001, ch, [['p', alice.pubkey]])).toEqual([false, HIGHER_RANK]);
    expect(await members(ch)).toEqual({ [alice.pubkey]: 'owner', [dave.pubkey]: 'owner' });
    expect(await cmd(relayAdmin, 9000, ch, [['p', dave.pubkey, 'admin']])).toEqual([true, '']);
    expect(await members(ch)).toEqual({ [alice.pubkey]: 'owner', [dave.pubkey]: 'admin' });
  });

  it('channel admins manage members and grant admin, but do not demote or remove each other', async () => {
    const ch = await newChannel(alice);
    expect(await cmd(alice, 9000, ch, [['p', dave.pubkey, 'admin']])).toEqual([true, '']);
    expect(await cmd(dave, 9000, ch, [['p', erin.pubkey, 'admin']])).toEqual([true, '']);
    expect(await cmd(dave, 9000, ch, [['p', erin.pubkey, 'member']])).toEqual([false, HIGHER_RANK]);
    expect(await cmd(erin, 9001, ch, [['p', dave.pubkey]])).toEqual([false, HIGHER_RANK]);
    expect(await members(ch)).toEqual({ [alice.pubkey]: 'owner', [dave.pubkey]: 'admin', [erin.pubkey]: 'admin' });
    expect(await cmd(alice, 9000, ch, [['p', erin.pubkey, 'member']])).toEqual([true, '']);
    expect(await cmd(dave, 9001, ch, [['p', erin.pubkey]])).toEqual([true, '']);
    // Anyone may step down or leave: acting on oneself is bounded only by what one may grant.
    expect(await cmd(dave, 9000, ch, [['p', dave.pubkey, 'owner']])).toEqual([false, OWNER_REQUIRED]);
    expect(await cmd(dave, 9000, ch, [['p', dave.pubkey, 'member']])).toEqual([true, '']);
    expect(await members(ch)).toEqual({ [alice.pubkey]: 'owner', [dave.pubkey]: 'member' });
  });

  it('a channel owner cannot remove the relay owner or a relay admin who are members of its channel', async () => {
    const ch = await newChannel(alice, 'open');
    expect(await cmd(owner, 9021, ch)).toEqual([true, '']);
    expect(await cmd(relayAdmin, 9021, ch)).toEqual([true, '']);
    expect(await cmd(alice, 9001, ch, [['p', owner.pubkey]])).toEqual([false, HIGHER_RANK]);
    expect(await cmd(alice, 9001, ch, [['p', relayAdmin.pubkey]])).toEqual([false, HIGHER_RANK]);
    expect(await cmd(relayAdmin, 9001, ch, [['p', owner.pubkey]])).toEqual([false, HIGHER_RANK]);
    expect(await members(ch)).toEqual({ [alice.pubkey]: 'owner', [owner.pubkey]: 'member', [relayAdmin.pubkey]: 'member' });
  });
});

describe('relay moderation follows the same order', () => {
  const mod = (id: Identity, kind: number, target: string, tags: string[][] = []) =>
    publish(id, id.sign({ kind, content: String(seq++), tags: [['p', target], ...tags] }));
  const inAnHour = () => String(Math.floor(Date.now() / 1000) + 3600);

  it('a relay admin cannot ban or time out the relay owner or a peer; the relay owner times out a relay admin', async () => {
    expect(await mod(relayAdmin, 9040, owner.pubkey)).toEqual([false, RELAY_HIGHER_RANK]);
    expect(await mod(relayAdmin, 9042, relayAdmin2.pubkey, [['expiration', inAnHour()]])).toEqual([false, RELAY_HIGHER_RANK]);
    expect(await mod(owner, 9042, relayAdmin2.pubkey, [['expiration', inAnHour()]])).toEqual([true, '']);
    expect(await mod(owner, 9043, relayAdmin2.pubkey)).toEqual([true, '']);
    expect(await both(`select pubkey from bans where pubkey = $1`, [owner.pubkey])).toEqual([]);
  });
});
