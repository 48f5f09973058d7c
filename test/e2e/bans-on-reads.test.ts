/**
 * Bans apply to reads (issue 21, finding 2; relay.md §2.2, §2.9): a key banned after its AUTH has
 * its open subscriptions ended with `CLOSED "blocked: you are banned from this community"` and its
 * socket closed with 1008 "access revoked", without sending anything; a REQ or COUNT it sends is
 * refused the same way; `/query` and `/count` refuse it with 403. Other keys in the community keep
 * reading. A timeout is a write block only: the timed-out key keeps reading.
 *
 * Bans are written with plain SQL on the writer. Three relays on one writer + replica pair:
 * `sweeping` re-checks bans every 200 ms; `admitting` and `second` never within a test's lifetime,
 * so on them a ban arrives only through the `buzz_bans` notification (migration 0021), a
 * request's own admission, or the re-check of every socket after the ban listener reconnects
 * (issue 17: admission answers from a per-pod ban cache).
 */
import { finalizeEvent, type VerifiedEvent } from 'nostr-tools/pure';
import { mintAuthTag } from '../harness/nip-oa-tag.js';
import { authTemplate, Frame, Identity, newIdentity, nip98Header, RawClient } from '../harness/nostr-clients.js';
import { relayEnv, RelayFixture, startRelayFixture } from '../harness/relay-fixture.js';
import { RelayProcess, startRelay } from '../harness/relay-process.js';
import { eventually } from '../harness/eventually.js';

const BANNED = 'blocked: you are banned from this community';
const LIMITS = {
  BUZZ_REQUIRE_AUTH_TOKEN: 'false',
  BUZZ_RATE_LIMIT_HUMAN_WS_EVENTS_PER_SEC: '100',
  BUZZ_RATE_LIMIT_HUMAN_MESSAGES_PER_MIN: '1000',
  BUZZ_RATE_LIMIT_HUMAN_API_CALLS_PER_MIN: '1000',
};

let fixture: RelayFixture;
let admitting: RelayProcess;
let sweeping: RelayProcess;
let second: RelayProcess;
const alice = newIdentity();
const bob = newIdentity();
const clients: RawClient[] = [];

beforeAll(async () => {
  fixture = await startRelayFixture({ ...LIMITS, BUZZ_BAN_RECHECK_MS: '3600000' });
  admitting = fixture.relay;
  sweeping = await startRelay(relayEnv(fixture.db, { ...LIMITS, BUZZ_BAN_RECHECK_MS: '200' }));
  second = await startRelay(relayEnv(fixture.db, { ...LIMITS, BUZZ_BAN_RECHECK_MS: '3600000' }));
  await eventually('every relay listens for ban changes', async () => (await listenerPids()).length === 3);
});

afterAll(async () => {
  for (const c of clients) c.close();
  await sweeping?.stop();
  await second?.stop();
  await fixture?.close();
});

async function connect(relay: RelayProcess, id: Identity): Promise<RawClient> {
  const c = await RawClient.authed(relay.wsUrl, id);
  clients.push(c);
  return c;
}

async function ban(id: Identity): Promise<void> {
  await fixture.writer.query(`insert into bans (community_id, pubkey) select id, $1 from communities where host = 'localhost'`, [id.pubkey]);
}

async function timeOut(id: Identity): Promise<void> {
  await fixture.writer.query(`insert into timeouts (community_id, pubkey, until) select id, $1, now() + interval '1 hour' from communities where host = 'localhost'`, [id.pubkey]);
}

/** Publishes a note as alice and resolves once `c` has it on `subId`. */
async function noteReaches(a: RawClient, c: RawClient, subId: string, content: string): Promise<VerifiedEvent> {
  const note = alice.sign({ kind: 1, content });
  const from = c.frames.length;
  expect(await a.publish(note)).toEqual([true, '']);
  await c.waitFor((f) => f[0] === 'EVENT' && f[1] === subId && (f[2] as { id: string }).id === note.id, 5000, from);
  return note;
}

/** The relays' ban-listener sessions on this test's database. */
async function listenerPids(): Promise<number[]> {
  const { rows } = await fixture.writer.query<{ pid: number }>(`select pid from pg_stat_activity where application_name = 'buzz-relay-ban-listener' and datname = current_database()`);
  return rows.map((r) => r.pid);
}

async function listenerGauge(relay: RelayProcess): Promise<string | undefined> {
  const text = await (await fetch(relay.metricsUrl)).text();
  return /^buzz_ban_listener_connected (\S+)$/m.exec(text)?.[1];
}

/** The socket's subscriptions are ended with the ban reason and it is closed 1008. */
async function expectRevoked(c: RawClient, subId: string): Promise<void> {
  expect(await c.waitFor((f) => f[0] === 'CLOSED' && f[1] === subId)).toEqual(['CLOSED', subId, BANNED]);
  expect(await c.waitClosed()).toEqual({ code: 1008, reason: 'access revoked' });
}

/**
 * Sends `verb` requests one after another until the ban has reached the socket. A request the pod
 * handled before the ban's notification arrived may be answered; after it, none is: the request
 * gets `CLOSED <sub> blocked:` (admission), or the socket is closed 1008 first (the enforcer).
 */
async function pollUntilRefused(c: RawClient, verb: 'REQ' | 'COUNT', timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (let i = 0; !c.closed; i++) {
    if (Date.now() > deadline) throw new Error(`${verb} still served ${timeoutMs} ms after the ban`);
    const sub = `${verb}-${i}`;
    const from = c.frames.length;
    c.send([verb, sub, { kinds: [1] }]);
    const answer = await c.waitFor((f) => f[1] === sub && (f[0] === 'EOSE' || f[0] === 'COUNT' || f[0] === 'CLOSED'), 5000, from).catch(() => undefined);
    if (answer?.[0] === 'CLOSED') expect(answer).toEqual(['CLOSED', sub, BANNED]);
  }
  expect(await c.waitClosed()).toEqual({ code: 1008, reason: 'access revoked' });
}

function eventsAfter(c: RawClient, from: number): Frame[] {
  return c.frames.slice(from).filter((f) => f[0] === 'EVENT');
}


type Via = 'nip98' | 'x-pubkey';

async function post(relay: RelayProcess, id: Identity, path: '/query' | '/count', via: Via): Promise<{ status: number; body: unknown }> {
  const body = JSON.stringify([{ kinds: [1], limit: 5 }]);
  const headers: Record<string, string> = via === 'nip98' ? { authorization: nip98Header(id, `${relay.httpUrl}${path}`, body, undefined, true) } : { 'x-pubkey': id.pubkey };
  const res = await fetch(`${relay.httpUrl}${path}`, { method: 'POST', headers, body });
  return { status: res.status, body: await res.json() };
}

describe('a ban reaches open sockets', () => {
  it('ends the banned key’s subscriptions with CLOSED and closes its socket; another key keeps receiving', async () => {
    const mallory = newIdentity();
    const [a, b, m] = [await connect(sweeping, alice), await connect(sweeping, bob), await connect(sweeping, mallory)];
    expect((await m.req('notes', { kinds: [1] })).end).toEqual(['EOSE', 'notes']);
    expect((await m.req('mine', { authors: [mallory.pubkey] })).end).toEqual(['EOSE', 'mine']);
    expect((await b.req('notes', { kinds: [1] })).end).toEqual(['EOSE', 'notes']);
    await noteReaches(a, m, 'notes', 'before the ban');

    await ban(mallory);
    const closedNotes = await m.waitFor((f) => f[0] === 'CLOSED' && f[1] === 'notes');
    expect(closedNotes).toEqual(['CLOSED', 'notes', BANNED]);
    expect(await m.waitFor((f) => f[0] === 'CLOSED' && f[1] === 'mine')).toEqual(['CLOSED', 'mine', BANNED]);
    expect(await m.waitClosed()).toEqual({ code: 1008, reason: 'access revoked' });
    const afterClosed = m.frames.indexOf(closedNotes);

    // Bob, in the same community on the same pod, still receives; Mallory received nothing more.
    await noteReaches(a, b, 'notes', 'after the ban');
    expect(eventsAfter(m, afterClosed)).toEqual([]);
  });

  it('ends an agent’s subscriptions when its NIP-OA owner is banned', async () => {
    const owner = newIdentity();
    const agent = newIdentity();
    const c = await RawClient.connect(sweeping.wsUrl);
    clients.push(c);
    const template = authTemplate(c.challenge, sweeping.wsUrl);
    const authEv = finalizeEvent({ ...template, tags: [...template.tags, mintAuthTag(owner.sk, agent.pubkey)] }, agent.sk);
    c.send(['AUTH', authEv]);
    expect((await c.waitFor((f) => f[0] === 'OK' && f[1] === authEv.id))[2]).toBe(true);
    expect((await c.req('notes', { kinds: [1] })).end).toEqual(['EOSE', 'notes']);

    await ban(owner);
    expect(await c.waitFor((f) => f[0] === 'CLOSED' && f[1] === 'notes')).toEqual(['CLOSED', 'notes', BANNED]);
    expect(await c.waitClosed()).toEqual({ code: 1008, reason: 'access revoked' });
  });
});

describe('a banned key’s requests are refused at admission', () => {
  it('refuses REQ and COUNT once the ban reaches the pod, ends the socket’s other subscriptions and closes it; another key is served', async () => {
    const mallory = newIdentity();
    const m1 = await connect(admitting, mallory);
    const m2 = await connect(admitting, mallory);
    const b = await connect(admitting, bob);
    expect((await m1.req('notes', { kinds: [1] })).end).toEqual(['EOSE', 'notes']);
    expect((await m2.req('notes', { kinds: [1] })).end).toEqual(['EOSE', 'notes']);

    await ban(mallory);
    await Promise.all([pollUntilRefused(m1, 'REQ'), pollUntilRefused(m2, 'COUNT')]);
    for (const m of [m1, m2]) expect(m.frames.filter((f) => f[0] === 'CLOSED' && f[1] === 'notes')).toEqual([['CLOSED', 'notes', BANNED]]);

    expect((await b.req('again', { kinds: [1] })).end).toEqual(['EOSE', 'again']);
    const fromB = b.frames.length;
    b.send(['COUNT', 'c', { kinds: [1] }]);
    expect((await b.waitFor((f) => f[1] === 'c', 5000, fromB))[0]).toBe('COUNT');
  });

  it.each<Via>(['nip98', 'x-pubkey'])('refuses /query and /count with 403 (%s); another key is served', async (via) => {
    const mallory = newIdentity();
    expect((await post(admitting, mallory, '/query', via)).status).toBe(200);
    expect((await post(admitting, mallory, '/count', via)).status).toBe(200);

    await ban(mallory);
    expect(await post(admitting, mallory, '/query', via)).toEqual({ status: 403, body: { error: BANNED } });
    expect(await post(admitting, mallory, '/count', via)).toEqual({ status: 403, body: { error: BANNED } });
    expect((await post(admitting, bob, '/query', via)).status).toBe(200);
    expect((await post(admitting, bob, '/count', via)).status).toBe(200);
  });
});

describe('a ban written by SQL reaches every pod through the notification (no periodic re-check)', () => {
  it('closes the banned key’s sockets on two pods; its new AUTH is refused; another key keeps reading and its socket stays open', async () => {
    const mallory = newIdentity();
    const b = await connect(second, bob);
    const [m1, m2] = [await connect(admitting, mallory), await connect(second, mallory)];
    for (const c of [m1, m2, b]) expect((await c.req('notes', { kinds: [1] })).end).toEqual(['EOSE', 'notes']);

    await ban(mallory);
    await expectRevoked(m1, 'notes');
    await expectRevoked(m2, 'notes');
    expect((await b.req('later', { kinds: [1] })).end).toEqual(['EOSE', 'later']);
    expect(b.closed).toBeUndefined();
    await expect(RawClient.authed(second.wsUrl, mallory)).rejects.toThrow();
  });

  it('still closes them when the listeners’ sessions are terminated, and the listeners come back', async () => {
    const mallory = newIdentity();
    const [m1, m2] = [await connect(admitting, mallory), await connect(second, mallory)];
    for (const c of [m1, m2]) expect((await c.req('notes', { kinds: [1] })).end).toEqual(['EOSE', 'notes']);
    const before = await listenerPids();
    expect(before).toHaveLength(3);

    await fixture.writer.query(`select pg_terminate_backend(pid) from pg_stat_activity where application_name = 'buzz-relay-ban-listener' and datname = current_database()`);
    await ban(mallory);
    await expectRevoked(m1, 'notes');
    await expectRevoked(m2, 'notes');
    await eventually('every relay listens again on a new session', async () => {
      const now = await listenerPids();
      return now.length === 3 && now.every((pid) => !before.includes(pid));
    });
    for (const relay of [admitting, second, sweeping]) expect(await listenerGauge(relay)).toBe('1');

    // And notifications flow on the new sessions.
    const eve = newIdentity();
    const e = await connect(second, eve);
    expect((await e.req('notes', { kinds: [1] })).end).toEqual(['EOSE', 'notes']);
    await ban(eve);
    await expectRevoked(e, 'notes');
  });
});

describe('a timeout is a write block only (relay.md §2.9)', () => {
  it('refuses the timed-out key’s EVENT and keeps serving its reads, live delivery included', async () => {
    const tim = newIdentity();
    const eve = newIdentity();
    const a = await connect(sweeping, alice);
    const t = await connect(sweeping, tim);
    const e = await connect(sweeping, eve);
    expect((await t.req('notes', { kinds: [1] })).end).toEqual(['EOSE', 'notes']);

    await timeOut(tim);
    const [ok, message] = await t.publish(tim.sign({ kind: 1, content: 'muted' }));
    expect(ok).toBe(false);
    expect(message).toMatch(/^restricted: you are timed out until \d+$/);
    expect((await t.req('more', { kinds: [1], limit: 1 })).end).toEqual(['EOSE', 'more']);
    const from = t.frames.length;
    t.send(['COUNT', 'c', { kinds: [1] }]);
    expect((await t.waitFor((f) => f[1] === 'c', 5000, from))[0]).toBe('COUNT');
    expect((await post(sweeping, tim, '/query', 'nip98')).status).toBe(200);
    expect((await post(sweeping, tim, '/count', 'x-pubkey')).status).toBe(200);

    // Eve's ban, written after Tim's timeout, closing her socket shows a re-check pass has run
    // since; Tim's socket and subscription came through it.
    await ban(eve);
    expect(await e.waitClosed()).toEqual({ code: 1008, reason: 'access revoked' });
    await noteReaches(a, t, 'notes', 'tim still reads');
    expect(t.closed).toBeUndefined();
  });
});
