/**
 * NIP-43 relay administration on the real writer + replica, with membership enforced: 9030 add,
 * 9031 remove, 9032 change role and the 28936 leave request. For each: allowed (the row on the
 * writer and the replica, the relay-signed 8000/8001 and 13534), refused with its exact reason,
 * and the command itself never stored. A removal closes the removed member's socket. 9033 sets
 * the workspace profile (icon, thread display) on the community row. Operators
 * (RELAY_OPERATOR_PUBKEYS) pass the membership gate only with a row, as relay.md §2.5 step 4 says.
 */
import { randomBytes } from 'node:crypto';
import { getPublicKey, type VerifiedEvent } from 'nostr-tools/pure';
import { httpRequest, Identity, newIdentity, RawClient } from '../harness/nostr-clients.js';
import { RelayFixture, startRelayFixture } from '../harness/relay-fixture.js';
import { cmd, CommandSession, nowSecs } from './command-session.js';
import { PairState } from './membership-state.js';

const RELAY_KEY = randomBytes(32).toString('hex');
const RELAY_PUBKEY = getPublicKey(Buffer.from(RELAY_KEY, 'hex'));
const owner = newIdentity();
const admin = newIdentity();
const member = newIdentity();
const operator = newIdentity();
let fixture: RelayFixture;
let pair: PairState;
const now = nowSecs;
let session: CommandSession;
const connect = (id: Identity) => session.connect(id);

beforeAll(async () => {
  fixture = await startRelayFixture({
    BUZZ_REQUIRE_RELAY_MEMBERSHIP: 'true',
    RELAY_OWNER_PUBKEY: owner.pubkey,
    RELAY_OPERATOR_PUBKEYS: operator.pubkey,
    BUZZ_RELAY_PRIVATE_KEY: RELAY_KEY,
    BUZZ_RATE_LIMIT_HUMAN_WS_EVENTS_PER_SEC: '200',
    BUZZ_RATE_LIMIT_HUMAN_MESSAGES_PER_MIN: '10000',
  });
  pair = new PairState(fixture.db);
  session = new CommandSession(() => fixture.relay.wsUrl);
  const o = await connect(owner);
  expect(await o.publish(cmd(owner, 9030, admin.pubkey, [['role', 'admin']]))).toEqual([true, '']);
  expect(await o.publish(cmd(owner, 9030, member.pubkey))).toEqual([true, '']);
});

afterAll(async () => {
  session?.closeAll();
  await pair?.close();
  await fixture?.close();
});



async function expectNotStored(...events: VerifiedEvent[]): Promise<void> {
  for (const e of events) expect(await pair.stored(e.id)).toBe(false);
}

describe('9030 add member', () => {
  it('lets an admin add a member: the row is on the writer and the replica, with 8000 and a new 13534', async () => {
    const a = await connect(admin);
    const newcomer = newIdentity();
    const add = cmd(admin, 9030, newcomer.pubkey);
    expect(await a.publish(add)).toEqual([true, '']);
    expect(await pair.role(newcomer.pubkey)).toEqual(['member', 'member']);
    const added = await pair.liveEvents(RELAY_PUBKEY, 8000);
    expect(added.some((e) => JSON.stringify(e.tags) === JSON.stringify([['-'], ['p', newcomer.pubkey]]))).toBe(true);
    const [snapshot, ...older] = await pair.liveEvents(RELAY_PUBKEY, 13534);
    expect(older).toEqual([]); // replaceable: one live snapshot
    expect(snapshot.tags[0]).toEqual(['-']);
    expect(snapshot.tags).toContainEqual(['member', newcomer.pubkey]);
    expect(snapshot.tags).toContainEqual(['member', owner.pubkey]);
    await expectNotStored(add);
    // The newcomer can now authenticate on the closed relay and read the snapshot.
    const n = await connect(newcomer);
    const { events } = await n.req('snap', { kinds: [13534] });
    expect(events.map((e) => e.pubkey)).toEqual([RELAY_PUBKEY]);
  });

  it('refuses a plain member, an admin granting admin, an owner role and a bad p tag, and stores nothing', async () => {
    const m = await connect(member);
    const a = await connect(admin);
    const target = newIdentity().pubkey;
    const refused: Array<[RawClient, VerifiedEvent, string]> = [
      [m, cmd(member, 9030, target), 'invalid: actor not authorized: must be admin or owner'],
      [a, cmd(admin, 9030, target, [['role', 'admin']]), 'invalid: actor not authorized: only owner can grant admin role'],
      [a, cmd(admin, 9030, target, [['role', 'owner']]), 'invalid: invalid role: use kind:9032 to promote to owner'],
      [a, admin.sign({ kind: 9030, tags: [['p', 'abc']] }), 'invalid: missing or invalid p tag'],
      [a, admin.sign({ kind: 9030, tags: [['p', target], ['p', newIdentity().pubkey]] }), 'invalid: missing or invalid p tag'],
    ];
    for (const [client, event, reason] of refused) expect(await client.publish(event)).toEqual([false, reason]);
    expect(await pair.role(target)).toEqual([null, null]);
    await expectNotStored(...refused.map(([, e]) => e));
  });

  it('refuses a stale command and a replayed one', async () => {
    const o = await connect(owner);
    const target = newIdentity().pubkey;
    const stale = cmd(owner, 9030, target, [], now() - 600);
    const [ok, reason] = await o.publish(stale);
    expect(ok).toBe(false);
    expect(reason).toMatch(/^invalid: event timestamp out of range: created_at=\d+, now=\d+, delta=-6\d\ds \(max ±120s\)$/);
    const add = cmd(owner, 9030, target);
    expect(await o.publish(add)).toEqual([true, '']);
    expect(await o.publish(cmd(owner, 9031, target))).toEqual([true, '']);
    o.send(['EVENT', add]);
    expect((await o.waitFor((f) => f[0] === 'OK' && f[1] === add.id && f[2] === false))[3]).toBe('invalid: replay detected: command already handled');
    expect(await pair.role(target)).toEqual([null, null]);
  });

  it('refuses client copies of the relay-signed NIP-43 kinds', async () => {
    const o = await connect(owner);
    for (const kind of [8000, 8001, 13534]) {
      expect(await o.publish(owner.sign({ kind, tags: [['-'], ['p', member.pubkey]] }))).toEqual([false, 'restricted: relay-only kind']);
    }
  });
});

describe('9031 remove member', () => {
  it('removes a member: the row is gone on both servers, 8001 is stored and the member’s socket is revoked', async () => {
    const victim = newIdentity();
    const o = await connect(owner);
    expect(await o.publish(cmd(owner, 9030, victim.pubkey))).toEqual([true, '']);
    const v = await connect(victim);
    expect((await v.req('live', { kinds: [9] })).end).toEqual(['EOSE', 'live']);
    const a = await connect(admin);
    const remove = cmd(admin, 9031, victim.pubkey);
    expect(await a.publish(remove)).toEqual([true, '']);
    expect(await v.waitFor((f) => f[0] === 'CLOSED' && f[1] === 'live')).toEqual(['CLOSED', 'live', 'restricted: not a relay member']);
    expect(await v.waitClosed()).toEqual({ code: 1008, reason: 'access revoked' });
    expect(await pair.role(victim.pubkey)).toEqual([null, null]);
    const removed = await pair.liveEvents(RELAY_PUBKEY, 8001);
    expect(removed.some((e) => JSON.stringify(e.tags) === JSON.stringify([['-'], ['p', victim.pubkey]]))).toBe(true);
    const [snapshot] = await pair.liveEvents(RELAY_PUBKEY, 13534);
    expect(snapshot.tags).not.toContainEqual(['member', victim.pubkey]);
    await expectNotStored(remove);
    await expect(RawClient.authed(fixture.relay.wsUrl, victim)).rejects.toThrow('restricted: not a relay member');
  });

  it('refuses removing the owner, oneself, an admin (by an admin), an unknown key, and a plain member’s attempt', async () => {
    const a = await connect(admin);
    const m = await connect(member);
    const otherAdmin = newIdentity();
    const o = await connect(owner);
    expect(await o.publish(cmd(owner, 9030, otherAdmin.pubkey, [['role', 'admin']]))).toEqual([true, '']);
    const unknown = newIdentity().pubkey;
    const refused: Array<[RawClient, VerifiedEvent, string]> = [
      [a, cmd(admin, 9031, owner.pubkey), 'invalid: cannot remove the relay owner'],
      [a, cmd(admin, 9031, admin.pubkey), 'invalid: cannot remove yourself'],
      [a, cmd(admin, 9031, otherAdmin.pubkey), 'invalid: actor not authorized: admins can only remove members'],
      [a, cmd(admin, 9031, unknown), `invalid: member not found: ${unknown}`],
      [m, cmd(member, 9031, admin.pubkey), 'invalid: actor not authorized: must be admin or owner'],
    ];
    for (const [client, event, reason] of refused) expect(await client.publish(event)).toEqual([false, reason]);
    expect(await pair.role(otherAdmin.pubkey)).toEqual(['admin', 'admin']);
    expect(await pair.role(owner.pubkey)).toEqual(['owner', 'owner']);
    await expectNotStored(...refused.map(([, e]) => e));
  });
});

describe('9032 change role', () => {
  it('lets the owner promote and demote; refuses an admin, the owner role and the owner as target', async () => {
    const o = await connect(owner);
    const a = await connect(admin);
    const subject = newIdentity();
    expect(await o.publish(cmd(owner, 9030, subject.pubkey))).toEqual([true, '']);
    const promote = cmd(owner, 9032, subject.pubkey, [['role', 'admin']]);
    expect(await o.publish(promote)).toEqual([true, '']);
    expect(await pair.role(subject.pubkey)).toEqual(['admin', 'admin']);
    const refused: Array<[RawClient, VerifiedEvent, string]> = [
      [a, cmd(admin, 9032, subject.pubkey, [['role', 'member']]), 'invalid: actor not authorized: must be owner'],
      [o, cmd(owner, 9032, subject.pubkey, [['role', 'owner']]), 'invalid: cannot set role to owner'],
      [o, cmd(owner, 9032, subject.pubkey), 'invalid: missing role tag'],
      [o, cmd(owner, 9032, owner.pubkey, [['role', 'member']]), 'invalid: cannot change your own role'],
    ];
    for (const [client, event, reason] of refused) expect(await client.publish(event)).toEqual([false, reason]);
    expect(await pair.role(subject.pubkey)).toEqual(['admin', 'admin']);
    expect(await o.publish(cmd(owner, 9032, subject.pubkey, [['role', 'member']]))).toEqual([true, '']);
    expect(await pair.role(subject.pubkey)).toEqual(['member', 'member']);
    await expectNotStored(promote, ...refused.map(([, e]) => e));
  });
});

describe('28936 leave request', () => {
  it('removes the sender, answers info:, stores 8001 and closes the socket; the command is not stored', async () => {
    const leaver = newIdentity();
    const o = await connect(owner);
    expect(await o.publish(cmd(owner, 9030, leaver.pubkey))).toEqual([true, '']);
    const l = await connect(leaver);
    expect(await l.publish(leaver.sign({ kind: 28936, tags: [] }))).toEqual([false, 'invalid: leave request must include NIP-70 protected event tag ["-"]']);
    const [ok, reason] = await l.publish(leaver.sign({ kind: 28936, created_at: now() - 300, tags: [['-']] }));
    expect([ok, reason]).toEqual([false, expect.stringMatching(/^invalid: leave request timestamp out of range \(delta=-30\ds, max ±120s\)$/)]);
    const leave = leaver.sign({ kind: 28936, tags: [['-']] });
    expect(await l.publish(leave)).toEqual([true, 'info: you have left this relay']);
    expect(await l.waitClosed()).toEqual({ code: 1008, reason: 'access revoked' });
    expect(await pair.role(leaver.pubkey)).toEqual([null, null]);
    const removed = await pair.liveEvents(RELAY_PUBKEY, 8001);
    expect(removed.some((e) => JSON.stringify(e.tags) === JSON.stringify([['-'], ['p', leaver.pubkey]]))).toBe(true);
    await expectNotStored(leave);
  });

  it('refuses the owner', async () => {
    const o = await connect(owner);
    expect(await o.publish(owner.sign({ kind: 28936, tags: [['-']] }))).toEqual([false, 'invalid: relay owner cannot leave']);
    expect(await pair.role(owner.pubkey)).toEqual(['owner', 'owner']);
  });
});

describe('9033 workspace profile', () => {
  const profile = () =>
    pair.both(`select icon, thread_replies_in_channel from communities where host = 'localhost'`, [], (rows) => [rows[0].icon, rows[0].thread_replies_in_channel]);
  const nip11Icon = async () => (JSON.parse((await httpRequest(`${fixture.relay.httpUrl}/info`, {})).body) as { icon?: string }).icon;

  it('lets an admin set and clear the icon and the thread display; the community row changes on both servers and NIP-11 shows the icon', async () => {
    const a = await connect(admin);
    const icon = 'https://example.com/team.png';
    const set = admin.sign({ kind: 9033, tags: [['icon', icon], ['thread_replies_in_channel', 'true']] });
    expect(await a.publish(set)).toEqual([true, '']);
    expect(await profile()).toEqual([
      [icon, true],
      [icon, true],
    ]);
    expect(await nip11Icon()).toBe(icon);
    const o = await connect(owner);
    const clear = owner.sign({ kind: 9033, tags: [['icon', ''], ['thread_replies_in_channel', 'off']] });
    expect(await o.publish(clear)).toEqual([true, '']);
    expect(await profile()).toEqual([
      [null, false],
      [null, false],
    ]);
    expect(await nip11Icon()).toBeUndefined();
    await expectNotStored(set, clear);
  });

  it('refuses a plain member and malformed values, and changes nothing', async () => {
    const a = await connect(admin);
    const o = await connect(owner);
    const kept = 'data:image/png;base64,iVBORw0KGgo=';
    expect(await o.publish(owner.sign({ kind: 9033, tags: [['icon', kept]] }))).toEqual([true, '']);
    const m = await connect(member);
    const refused: Array<[RawClient, VerifiedEvent, string]> = [
      [m, member.sign({ kind: 9033, tags: [['icon', 'https://evil.example/x.png']] }), 'invalid: actor not authorized: must be admin or owner'],
      [m, member.sign({ kind: 9033, tags: [['thread_replies_in_channel', 'true']] }), 'invalid: actor not authorized: must be admin or owner'],
      [a, admin.sign({ kind: 9033, tags: [['icon', 'javascript:alert(1)']] }), 'invalid: icon must be an http(s) URL or data:image/* URL'],
      [a, admin.sign({ kind: 9033, tags: [['icon', 'https://example.com/a b.png']] }), 'invalid: icon contains invalid characters'],
      [a, admin.sign({ kind: 9033, tags: [['icon', `https://example.com/${'a'.repeat(2048)}`]] }), 'invalid: icon URL too long: 2068 bytes (max 2048)'],
      [a, admin.sign({ kind: 9033, tags: [['thread_replies_in_channel', 'maybe']] }), 'invalid: thread_replies_in_channel must be true or false'],
      [a, admin.sign({ kind: 9033, created_at: now() - 600, tags: [['icon', '']] }), expect.stringMatching(/^invalid: event timestamp out of range: /) as unknown as string],
    ];
    for (const [client, event, reason] of refused) expect(await client.publish(event)).toEqual([false, reason]);
    expect(await profile()).toEqual([
      [kept, false],
      [kept, false],
    ]);
    await expectNotStored(...refused.map(([, e]) => e));
  });
});

describe('operators and the owner on a closed relay', () => {
  it('admits the configured owner through its bootstrapped row; an operator needs a row like anyone, then holds owner authority', async () => {
    expect(await pair.role(owner.pubkey)).toEqual(['owner', 'owner']);
    await expect(RawClient.authed(fixture.relay.wsUrl, operator)).rejects.toThrow('restricted: not a relay member');
    const o = await connect(owner);
    expect(await o.publish(cmd(owner, 9030, operator.pubkey))).toEqual([true, '']);
    expect(await pair.role(operator.pubkey)).toEqual(['member', 'member']);
    const op = await connect(operator);
    // Owner authority whatever the row says: only an owner changes roles.
    const subject = newIdentity();
    expect(await op.publish(cmd(operator, 9030, subject.pubkey, [['role', 'admin']]))).toEqual([true, '']);
    expect(await op.publish(cmd(operator, 9032, subject.pubkey, [['role', 'member']]))).toEqual([true, '']);
    expect(await pair.role(subject.pubkey)).toEqual(['member', 'member']);
    // Nobody removes an operator (9031), even the owner.
    expect(await o.publish(cmd(owner, 9031, operator.pubkey))).toEqual([false, 'invalid: cannot remove the relay owner']);
  });
});
