/**
 * Moderation commands 9040–9044 on the real writer + replica (membership not enforced): who may
 * ban, unban, time out and lift a timeout, the exact refusals, the state on both servers, the
 * ingest moderation gate they drive, and that no command is ever stored. A ban closes the banned
 * key's open socket; a timeout leaves it open and blocks writes only.
 */
import { type VerifiedEvent } from 'nostr-tools/pure';
import { Identity, newIdentity, RawClient } from '../harness/nostr-clients.js';
import { RelayFixture, startRelayFixture } from '../harness/relay-fixture.js';
import { cmd, CommandSession, nowSecs } from './command-session.js';
import { PairState } from './membership-state.js';

const owner = newIdentity();
const admin = newIdentity();
const member = newIdentity();
let fixture: RelayFixture;
let pair: PairState;
const now = nowSecs;
let session: CommandSession;
const connect = (id: Identity) => session.connect(id);
const BANNED = 'blocked: you are banned from this community';

beforeAll(async () => {
  fixture = await startRelayFixture({
    RELAY_OWNER_PUBKEY: owner.pubkey,
    BUZZ_RATE_LIMIT_HUMAN_WS_EVENTS_PER_SEC: '200',
    BUZZ_RATE_LIMIT_HUMAN_MESSAGES_PER_MIN: '10000',
    // The periodic ban sweep must not be what closes a banned socket here: the command's own hook is.
    BUZZ_BAN_RECHECK_MS: '3600000',
  });
  pair = new PairState(fixture.db);
  session = new CommandSession(() => fixture.relay.wsUrl);
  const o = await connect(owner);
  expect(await o.publish(cmd(owner, 9030, admin.pubkey, [['role', 'admin']]))).toEqual([true, '']);
});

afterAll(async () => {
  session?.closeAll();
  await pair?.close();
  await fixture?.close();
});



function restriction(pubkey: string, table: 'bans' | 'timeouts'): Promise<[boolean, boolean]> {
  return pair.both(`select 1 from ${table} where pubkey = $1`, [pubkey], (rows) => rows.length > 0);
}

async function expectNotStored(...events: VerifiedEvent[]): Promise<void> {
  for (const e of events) expect(await pair.stored(e.id)).toBe(false);
}

describe('9040 ban / 9041 unban', () => {
  it('lets an admin ban: the row is on both servers, the open socket is revoked, AUTH is refused; unban lifts it', async () => {
    const target = newIdentity();
    const t = await connect(target);
    expect((await t.req('live', { kinds: [1] })).end).toEqual(['EOSE', 'live']);
    const a = await connect(admin);
    const ban = cmd(admin, 9040, target.pubkey, [['reason', 'spam']]);
    expect(await a.publish(ban)).toEqual([true, '']);
    expect(await t.waitFor((f) => f[0] === 'CLOSED' && f[1] === 'live')).toEqual(['CLOSED', 'live', BANNED]);
    expect(await t.waitClosed()).toEqual({ code: 1008, reason: 'access revoked' });
    expect(await restriction(target.pubkey, 'bans')).toEqual([true, true]);
    await expect(RawClient.authed(fixture.relay.wsUrl, target)).rejects.toThrow(BANNED);
    const unban = cmd(admin, 9041, target.pubkey);
    expect(await a.publish(unban)).toEqual([true, '']);
    expect(await restriction(target.pubkey, 'bans')).toEqual([false, false]);
    const back = await connect(target);
    expect(await back.publish(target.sign({ kind: 1, content: 'back' }))).toEqual([true, '']);
    expect(await a.publish(cmd(admin, 9041, target.pubkey, [['reason', 'again']]))).toEqual([false, 'invalid: member is not banned']);
    await expectNotStored(ban, unban);
  });

  it('refuses a non-moderator, oneself, the owner and a peer admin, and changes nothing', async () => {
    const m = await connect(member);
    const a = await connect(admin);
    const peer = newIdentity();
    const o = await connect(owner);
    expect(await o.publish(cmd(owner, 9030, peer.pubkey, [['role', 'admin']]))).toEqual([true, '']);
    const victim = newIdentity().pubkey;
    const outranked = 'restricted: cannot moderate a relay owner, operator or admin of equal or higher rank';
    const refused: Array<[RawClient, VerifiedEvent, string]> = [
      [m, cmd(member, 9040, victim), 'restricted: moderator access required'],
      [a, cmd(admin, 9040, admin.pubkey), 'invalid: cannot moderate yourself'],
      [a, cmd(admin, 9040, owner.pubkey), outranked],
      [a, cmd(admin, 9040, peer.pubkey), outranked],
      [a, admin.sign({ kind: 9040, tags: [] }), 'invalid: missing or invalid p tag'],
      [a, cmd(admin, 9040, victim, [['expiration', String(now() - 10)]]), 'invalid: expiration must be in the future'],
    ];
    for (const [client, event, reason] of refused) expect(await client.publish(event)).toEqual([false, reason]);
    for (const pk of [victim, admin.pubkey, owner.pubkey, peer.pubkey]) expect(await restriction(pk, 'bans')).toEqual([false, false]);
    // The owner outranks an admin.
    expect(await o.publish(cmd(owner, 9040, peer.pubkey))).toEqual([true, '']);
    expect(await restriction(peer.pubkey, 'bans')).toEqual([true, true]);
    await expectNotStored(...refused.map(([, e]) => e));
  });
});

describe('9042 timeout / 9043 untimeout', () => {
  it('blocks writes until the expiration with the socket left open; a timed-out admin can still lift a timeout', async () => {
    const target = newIdentity();
    const t = await connect(target);
    const a = await connect(admin);
    const o = await connect(owner);
    const until = now() + 3600;
    const timeout = cmd(admin, 9042, target.pubkey, [['expiration', String(until)]]);
    expect(await a.publish(timeout)).toEqual([true, '']);
    expect(await restriction(target.pubkey, 'timeouts')).toEqual([true, true]);
    expect(await t.publish(target.sign({ kind: 1, content: 'muted?' }))).toEqual([false, `restricted: you are timed out until ${until}`]);
    expect((await t.req('still-reads', { kinds: [1] })).end).toEqual(['EOSE', 'still-reads']);
    expect(t.closed).toBeUndefined();

    // The owner times the admin out: the admin's own posts are blocked, but moderation still runs.
    expect(await o.publish(cmd(owner, 9042, admin.pubkey, [['expiration', String(until)]]))).toEqual([true, '']);
    expect(await a.publish(admin.sign({ kind: 1, content: 'x' }))).toEqual([false, `restricted: you are timed out until ${until}`]);
    const lift = cmd(admin, 9043, target.pubkey);
    expect(await a.publish(lift)).toEqual([true, '']);
    expect(await restriction(target.pubkey, 'timeouts')).toEqual([false, false]);
    expect(await t.publish(target.sign({ kind: 1, content: 'free' }))).toEqual([true, '']);
    // A timed-out admin keeps relay administration too (9030 skips the moderation gate).
    expect(await a.publish(cmd(admin, 9030, newIdentity().pubkey))).toEqual([true, '']);
    expect(await o.publish(cmd(owner, 9043, admin.pubkey))).toEqual([true, '']);
    expect(await a.publish(admin.sign({ kind: 1, content: 'unmuted' }))).toEqual([true, '']);
    await expectNotStored(timeout, lift);
  });

  it('refuses a timeout without expiration, a plain member, and lifting a timeout that is not there', async () => {
    const a = await connect(admin);
    const m = await connect(member);
    const target = newIdentity().pubkey;
    expect(await a.publish(cmd(admin, 9042, target))).toEqual([false, 'invalid: timeout requires an expiration tag']);
    expect(await m.publish(cmd(member, 9042, target, [['expiration', String(now() + 60)]]))).toEqual([false, 'restricted: moderator access required']);
    expect(await m.publish(cmd(member, 9043, target))).toEqual([false, 'restricted: moderator access required']);
    expect(await a.publish(cmd(admin, 9043, target))).toEqual([false, 'invalid: member is not timed out']);
    expect(await restriction(target, 'timeouts')).toEqual([false, false]);
  });
});

describe('9044 and the open relay', () => {
  it('refuses report resolution (no report queue) after authorising it', async () => {
    const a = await connect(admin);
    const m = await connect(member);
    const report = 'a'.repeat(64);
    expect(await m.publish(member.sign({ kind: 9044, tags: [['report', report]] }))).toEqual([false, 'restricted: moderator access required']);
    expect(await a.publish(admin.sign({ kind: 9044, tags: [['report', report]] }))).toEqual([false, 'invalid: report resolution (kind 9044) is not supported by this relay']);
  });

  it('answers a leave request on a relay that does not enforce membership', async () => {
    const m = await connect(member);
    expect(await m.publish(member.sign({ kind: 28936, tags: [['-']] }))).toEqual([false, 'invalid: relay membership is not enabled']);
  });
});
