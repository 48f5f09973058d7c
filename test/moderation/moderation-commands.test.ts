/**
 * Moderation commands 9040–9044 on the real writer + replica (membership not enforced): who may
 * ban, unban, time out, lift a timeout and resolve a report, the exact refusals, the state and the
 * audit rows on both servers, the ingest moderation gate they drive, and that no command is ever
 * stored. Reports (1984) go to the moderator queue, never to the events table. A ban closes the banned
 * key's open socket; a timeout leaves it open and blocks writes only.
 */
import { randomUUID } from 'node:crypto';
import { type VerifiedEvent } from 'nostr-tools/pure';
import { httpRequest, Identity, newIdentity, RawClient } from '../harness/nostr-clients.js';
import { RelayFixture, startRelayFixture } from '../harness/relay-fixture.js';
import { cmd, CommandSession, nowSecs, signedGet } from './command-session.js';
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

/** The audit rows of one command, [action, actor, target, reason, tied to a report] each, on [writer, replica]. */
function auditOf(commandEventId: string): Promise<[unknown[][], unknown[][]]> {
  return pair.both(
    'select action, actor_pubkey, target_pubkey, reason, report_id is not null as has_report from moderation_actions where command_event_id = $1 order by created_at',
    [commandEventId],
    (rows) => rows.map((r) => [r.action, r.actor_pubkey, r.target_pubkey, r.reason, r.has_report]),
  );
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
    const again = cmd(admin, 9041, target.pubkey, [['reason', 'again']]);
    expect(await a.publish(again)).toEqual([false, 'invalid: member is not banned']);
    // One audit row per change, written with it; none for the refusal.
    expect(await auditOf(ban.id)).toEqual([[['ban', admin.pubkey, target.pubkey, 'spam', false]], [['ban', admin.pubkey, target.pubkey, 'spam', false]]]);
    expect((await auditOf(unban.id))[1]).toEqual([['unban', admin.pubkey, target.pubkey, null, false]]);
    expect(await auditOf(again.id)).toEqual([[], []]);
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
    for (const [, event] of refused) expect(await auditOf(event.id)).toEqual([[], []]);
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
    expect((await auditOf(timeout.id))[1]).toEqual([['timeout', admin.pubkey, target.pubkey, null, false]]);
    expect((await auditOf(lift.id))[1]).toEqual([['untimeout', admin.pubkey, target.pubkey, null, false]]);
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

describe('1984 reports, the moderator queue and 9044', () => {
  const reportRow = (reportEventId: string) =>
    pair.both(
      'select status, target_kind, target_pubkey, target_event_id, report_type, note, resolution_action, resolved_by from moderation_reports where report_event_id = $1',
      [reportEventId],
      (rows) => rows[0] ?? null,
    );
  const report = (by: Identity, tags: string[][], content = '') => by.sign({ kind: 1984, tags, content });

  it('queues a report of an event and of a key, never as an event; refuses malformed reports', async () => {
    const author = newIdentity();
    const au = await connect(author);
    const post = author.sign({ kind: 1, content: 'spam spam' });
    expect(await au.publish(post)).toEqual([true, '']);
    const m = await connect(member);
    const ofEvent = report(member, [['p', author.pubkey], ['e', post.id, 'spam']], 'selling things');
    expect(await m.publish(ofEvent)).toEqual([true, '']);
    const open = { status: 'open', target_kind: 'event', target_pubkey: author.pubkey, target_event_id: post.id, report_type: 'spam', note: 'selling things', resolution_action: null, resolved_by: null };
    expect(await reportRow(ofEvent.id)).toEqual([open, open]);
    // A re-send queues nothing new.
    expect(await m.publish(ofEvent)).toEqual([true, '']);
    expect(await pair.both('select 1 from moderation_reports where report_event_id = $1', [ofEvent.id], (rows) => rows.length)).toEqual([1, 1]);
    const ofKey = report(member, [['p', author.pubkey, 'impersonation']]);
    expect(await m.publish(ofKey)).toEqual([true, '']);
    expect((await reportRow(ofKey.id)).map((r) => r && [r.target_kind, r.target_event_id, r.report_type])).toEqual([
      ['pubkey', null, 'impersonation'],
      ['pubkey', null, 'impersonation'],
    ]);
    const id = 'b'.repeat(64);
    const refused: Array<[string[][], string]> = [
      [[['e', post.id, 'spam']], 'invalid: report must include a p tag'],
      [[['p', author.pubkey], ['p', member.pubkey], ['e', post.id, 'spam']], 'invalid: report must include exactly one p tag'],
      [[['p', 'abc', 'spam']], 'invalid: malformed p tag pubkey'],
      [[['p', author.pubkey], ['e', post.id]], 'invalid: report target tag missing report type'],
      [[['p', author.pubkey], ['e', post.id, 'rude']], 'invalid: unsupported report type: rude'],
      [[['p', author.pubkey], ['e', id, 'spam']], 'invalid: report target event not found'],
      [[['p', author.pubkey], ['x', id, 'malware']], 'invalid: report target blob not found'],
      [[['p', author.pubkey], ['e', post.id, 'spam'], ['x', id, 'spam']], 'invalid: report must target only one of e or x'],
    ];
    for (const [tags, reason] of refused) expect(await m.publish(report(member, tags))).toEqual([false, reason]);
    await expectNotStored(ofEvent, ofKey);
    expect((await m.req('reports', { kinds: [1984] })).events).toEqual([]);
  });

  it('answers a report of an event in a channel the reporter cannot read as if the event did not exist', async () => {
    const insider = newIdentity();
    const ins = await connect(insider);
    const channel = randomUUID();
    expect(await ins.publish(insider.sign({ kind: 9007, tags: [['h', channel], ['name', 'hidden'], ['private'], ['closed']], content: '' }))).toEqual([true, '']);
    const secret = insider.sign({ kind: 9, tags: [['h', channel]], content: 'members only' });
    expect(await ins.publish(secret)).toEqual([true, '']);
    const m = await connect(member);
    const probe = report(member, [['p', insider.pubkey], ['e', secret.id, 'spam']]);
    expect(await m.publish(probe)).toEqual([false, 'invalid: report target event not found']);
    expect(await reportRow(probe.id)).toEqual([null, null]);
    // The channel's own member may report it.
    const inside = report(insider, [['p', insider.pubkey], ['e', secret.id, 'other']]);
    expect(await ins.publish(inside)).toEqual([true, '']);
    expect((await reportRow(inside.id)).map((r) => r && r.target_event_id)).toEqual([secret.id, secret.id]);
  });

  it('lists the queue to moderators only, over NIP-98', async () => {
    const m = await connect(member);
    const filed = report(member, [['p', newIdentity().pubkey, 'other']]);
    expect(await m.publish(filed)).toEqual([true, '']);
    const url = fixture.relay.httpUrl;
    const listed = await signedGet(admin, url, '/moderation/reports?status=open');
    expect(listed.status).toBe(200);
    const mine = (listed.json.reports as Array<Record<string, unknown>>).find((r) => r.report_event_id === filed.id);
    expect(mine).toMatchObject({ reporter_pubkey: member.pubkey, status: 'open', report_type: 'other', target_kind: 'pubkey' });
    expect(await signedGet(member, url, '/moderation/reports')).toEqual({ status: 403, json: { error: 'restricted: moderator access required' } });
    expect(await signedGet(member, url, '/moderation/audit')).toEqual({ status: 403, json: { error: 'restricted: moderator access required' } });
    expect((await signedGet(admin, url, '/moderation/reports?status=closed')).status).toBe(400);
    // NIP-98's `u` is the absolute URL with its query string: signed that way, the same answer.
    expect(await signedGet(admin, url, '/moderation/reports?status=open', true)).toEqual(listed);
    expect((await signedGet(admin, url, '/moderation/audit?limit=5', true)).status).toBe(200);
    expect((await httpRequest(`${url}/moderation/reports`, {})).status).toBe(401);
  });

  it('lets a moderator resolve or dismiss an open report once, with an audit row; refuses the rest', async () => {
    const m = await connect(member);
    const a = await connect(admin);
    const target = newIdentity().pubkey;
    const first = report(member, [['p', target, 'spam']]);
    const second = report(member, [['p', target, 'profanity']]);
    for (const r of [first, second]) expect(await m.publish(r)).toEqual([true, '']);
    const resolve = (by: Identity, tags: string[][]) => by.sign({ kind: 9044, tags });
    const refused: Array<[RawClient, VerifiedEvent, string]> = [
      [m, resolve(member, [['report', first.id], ['status', 'resolved'], ['action', 'ban']]), 'restricted: moderator access required'],
      [a, resolve(admin, [['report', 'xyz'], ['status', 'resolved'], ['action', 'ban']]), 'invalid: missing or invalid report tag (expect 64-hex event id)'],
      [a, resolve(admin, [['report', first.id], ['action', 'ban']]), 'invalid: missing status tag'],
      [a, resolve(admin, [['report', first.id], ['status', 'resolved']]), 'invalid: missing action tag'],
      [a, resolve(admin, [['report', first.id], ['status', 'done'], ['action', 'ban']]), 'invalid: invalid status: done (expect resolved|dismissed)'],
      [a, resolve(admin, [['report', first.id], ['status', 'resolved'], ['action', 'shout']]), 'invalid: invalid action: shout (expect delete|kick|ban|timeout|dismiss|escalate)'],
      [a, resolve(admin, [['report', first.id], ['status', 'resolved'], ['action', 'dismiss']]), 'invalid: action `dismiss` pairs only with status `dismissed`'],
      [a, resolve(admin, [['report', 'c'.repeat(64)], ['status', 'resolved'], ['action', 'ban']]), 'invalid: report not found in this community'],
    ];
    for (const [client, event, reason] of refused) expect(await client.publish(event)).toEqual([false, reason]);
    expect((await reportRow(first.id)).map((r) => r?.status)).toEqual(['open', 'open']);

    const done = resolve(admin, [['report', first.id], ['status', 'resolved'], ['action', 'ban'], ['reason', 'repeat offender']]);
    expect(await a.publish(done)).toEqual([true, '']);
    expect((await reportRow(first.id)).map((r) => r && [r.status, r.resolution_action, r.resolved_by])).toEqual([
      ['resolved', 'ban', admin.pubkey],
      ['resolved', 'ban', admin.pubkey],
    ]);
    expect(await a.publish(resolve(admin, [['report', first.id], ['status', 'dismissed'], ['action', 'dismiss']]))).toEqual([false, 'invalid: report is not open (already resolved or dismissed)']);
    const dismiss = resolve(admin, [['report', second.id], ['status', 'dismissed'], ['action', 'dismiss']]);
    expect(await a.publish(dismiss)).toEqual([true, '']);
    expect((await reportRow(second.id)).map((r) => r?.status)).toEqual(['dismissed', 'dismissed']);
    expect(await auditOf(done.id)).toEqual([[['resolve:ban', admin.pubkey, target, 'repeat offender', true]], [['resolve:ban', admin.pubkey, target, 'repeat offender', true]]]);
    expect((await auditOf(dismiss.id))[1]).toEqual([['dismiss_report', admin.pubkey, target, null, true]]);
    for (const [, event] of refused) expect(await auditOf(event.id)).toEqual([[], []]);
    await expectNotStored(done, dismiss, ...refused.map(([, e]) => e));
  });
});

describe('the open relay', () => {
  it('answers a leave request on a relay that does not enforce membership', async () => {
    const m = await connect(member);
    expect(await m.publish(member.sign({ kind: 28936, tags: [['-']] }))).toEqual([false, 'invalid: relay membership is not enabled']);
  });
});
