/**
 * The chat surface end to end: a two-user workspace with an open and a
 * private channel, threads, reactions, every bridge branch, the refusals the
 * spec words, quotas and tenant isolation. The relay runs as a child process on
 * the real writer + streaming replica pair.
 */
import { randomUUID } from 'node:crypto';
import { Pool } from 'pg';
import { type VerifiedEvent } from 'nostr-tools/pure';
import { createTestDatabase, TestDatabase } from '../harness/test-database.js';
import { httpRequest, Identity, newIdentity, nip98Header, RawClient, wire } from '../harness/nostr-clients.js';
import { RelayProcess, startRelay } from '../harness/relay-process.js';

let db: TestDatabase;
let relay: RelayProcess;
let writer: Pool;
const alice = newIdentity();
const bob = newIdentity();
const mallory = newIdentity();
const openChannel = randomUUID();
const privateChannel = randomUUID();
let a: RawClient;
let b: RawClient;

beforeAll(async () => {
  db = await createTestDatabase();
  writer = new Pool({ connectionString: db.writerUrl, max: 2 });
  writer.on('error', () => undefined);
  relay = await startRelay({
    DATABASE_URL: db.writerUrl,
    READ_DATABASE_URL: db.readerUrl ?? '',
    BUZZ_DEFAULT_COMMUNITY_HOSTS: 'localhost',
    BUZZ_REQUIRE_AUTH_TOKEN: 'true',
    BUZZ_RATE_LIMIT_HUMAN_WS_EVENTS_PER_SEC: '50',
    BUZZ_RATE_LIMIT_HUMAN_MESSAGES_PER_MIN: '1000',
    BUZZ_RATE_LIMIT_HUMAN_API_CALLS_PER_MIN: '1000',
  });
  a = await RawClient.authed(relay.wsUrl, alice);
  b = await RawClient.authed(relay.wsUrl, bob);
  expect(await a.publish(alice.sign({ kind: 9007, tags: [['h', openChannel], ['name', 'general']] }))).toEqual([true, '']);
  expect(await a.publish(alice.sign({ kind: 9007, tags: [['h', privateChannel], ['name', 'secret'], ['visibility', 'private']] }))).toEqual([true, '']);
});

afterAll(async () => {
  a?.close();
  b?.close();
  await relay?.stop();
  await writer?.end();
  await db?.drop();
});

/** A NIP-98 Authorization header for a POST of body to path. */
function nip98(id: Identity, path: string, body: string, overrides: { url?: string; created_at?: number } = {}): string {
  return nip98Header(id, overrides.url ?? `${relay.httpUrl}${path}`, body, overrides.created_at);
}

async function post(id: Identity, path: '/query' | '/count', filters: unknown, auth?: string): Promise<{ status: number; body: unknown }> {
  const body = JSON.stringify(filters);
  const res = await fetch(`${relay.httpUrl}${path}`, { method: 'POST', headers: { authorization: auth ?? nip98(id, path, body) }, body });
  return { status: res.status, body: await res.json() };
}

function msg(id: Identity, channel: string, content: string, extra: string[][] = []): VerifiedEvent {
  return id.sign({ kind: 9, content, tags: [['h', channel], ...extra] });
}

describe('channels and membership', () => {
  it('lets anyone in the community post to an open channel', async () => {
    expect(await b.publish(msg(bob, openChannel, 'hi from bob'))).toEqual([true, '']);
  });

  it('refuses a channel message without an h tag', async () => {
    expect(await a.publish(alice.sign({ kind: 9, content: 'nowhere' }))).toEqual([false, 'invalid: channel-scoped events must include an h tag']);
  });

  it('keeps a private channel closed to non-members until an admin adds them', async () => {
    const secret = msg(alice, privateChannel, 'private words');
    expect(await a.publish(secret)).toEqual([true, '']);
    expect(await b.publish(msg(bob, privateChannel, 'let me in'))).toEqual([false, 'restricted: not a channel member']);
    expect((await b.req('p1', { '#h': [privateChannel] })).end).toEqual(['CLOSED', 'p1', 'restricted: not a channel member']);
    const globalRead = await b.req('p2', { ids: [secret.id] });
    expect(globalRead.events).toEqual([]);
    expect(await b.publish(bob.sign({ kind: 9021, tags: [['h', privateChannel]] }))).toEqual([false, 'restricted: channel is private']);
    expect(await b.publish(bob.sign({ kind: 9000, tags: [['h', privateChannel], ['p', bob.pubkey]] }))).toEqual([false, 'restricted: channel admin role required']);

    expect(await a.publish(alice.sign({ kind: 9000, tags: [['h', privateChannel], ['p', bob.pubkey]] }))).toEqual([true, '']);
    const after = await b.req('p3', { '#h': [privateChannel] });
    expect(after.events.map((e) => e.id)).toContain(secret.id);
    expect(await b.publish(msg(bob, privateChannel, 'thanks'))).toEqual([true, '']);
  });

  it('lets only channel admins manage members', async () => {
    const carol = newIdentity();
    const c = await RawClient.authed(relay.wsUrl, carol);
    expect(await c.publish(carol.sign({ kind: 9021, tags: [['h', openChannel]] }))).toEqual([true, '']);
    expect(await c.publish(carol.sign({ kind: 9000, tags: [['h', openChannel], ['p', carol.pubkey, 'admin']] }))).toEqual([false, 'restricted: channel admin role required']);
    c.close();
  });

  it('refuses to create a channel that exists', async () => {
    expect(await a.publish(alice.sign({ kind: 9007, tags: [['h', openChannel], ['name', 'again']] }))).toEqual([false, 'duplicate: channel already exists']);
  });

  it('delivers channel events live only to subscriptions pinned to that channel', async () => {
    const pinned = await b.req('live-h', { '#h': [openChannel], kinds: [9], since: Math.floor(Date.now() / 1000) });
    expect(pinned.end[0]).toBe('EOSE');
    const global = await b.req('live-global', { kinds: [9], since: Math.floor(Date.now() / 1000) });
    expect(global.end[0]).toBe('EOSE');
    const ev = msg(alice, openChannel, 'live one');
    await a.publish(ev);
    const got = await b.waitFor((f) => f[0] === 'EVENT' && f[1] === 'live-h' && (f[2] as { id: string }).id === ev.id);
    expect(got[1]).toBe('live-h');
    await b.req('sync', { ids: [ev.id] });
    // History may list open-channel rows to a global REQ; live delivery of channel events may not.
    expect(b.frames.filter((f) => f[0] === 'EVENT' && f[1] === 'live-global' && (f[2] as { id: string }).id === ev.id)).toEqual([]);
  });
});

describe('threads, reactions and the bridge branches', () => {
  let root: VerifiedEvent;
  let replies: VerifiedEvent[];

  beforeAll(async () => {
    root = msg(alice, openChannel, 'thread root about pineapples');
    expect(await a.publish(root)).toEqual([true, '']);
    replies = [];
    for (let i = 0; i < 3; i++) {
      const r = msg(bob, openChannel, `reply ${i}`, [['e', root.id, '', 'root'], ['p', alice.pubkey]]);
      expect(await b.publish(r)).toEqual([true, '']);
      replies.push(r);
    }
  });

  it('materialises reply counts at ingest', async () => {
    const { rows } = await writer.query('select reply_count, descendant_count from thread_metadata where event_id = $1', [Buffer.from(root.id, 'hex')]);
    expect(rows).toEqual([{ reply_count: 3, descendant_count: 3 }]);
  });

  it('stores one reaction per emoji and refuses a repeat', async () => {
    const r1 = bob.sign({ kind: 7, content: '🍍', tags: [['e', root.id], ['h', openChannel]] });
    expect(await b.publish(r1)).toEqual([true, '']);
    const again = bob.sign({ kind: 7, content: '🍍', tags: [['e', root.id], ['h', openChannel]], created_at: r1.created_at + 1 });
    expect(await b.publish(again)).toEqual([false, 'duplicate: reaction already exists']);
    expect(await b.publish(bob.sign({ kind: 7, content: '+', tags: [['e', 'f'.repeat(64)]] }))).toEqual([false, 'invalid: reaction target event not found']);
  });

  it('serves the channel window with aux, summaries and one bounds overlay', async () => {
    const { status, body } = await post(alice, '/query', [{ top_level: true, '#h': [openChannel], limit: 50, include_aux: true, include_summaries: true }]);
    expect(status).toBe(200);
    const events = body as VerifiedEvent[];
    const ids = events.map((e) => e.id);
    expect(ids).toContain(root.id);
    for (const r of replies) expect(ids).not.toContain(r.id);
    expect(events.some((e) => e.kind === 7)).toBe(true);
    const summary = events.find((e) => e.kind === 39005 && e.tags.some((t) => t[0] === 'e' && t[1] === root.id));
    expect(JSON.parse(summary!.content)).toMatchObject({ reply_count: 3, descendant_count: 3, participants: [bob.pubkey] });
    const bounds = events.filter((e) => e.kind === 39006);
    expect(bounds).toHaveLength(1);
    expect(JSON.parse(bounds[0].content)).toEqual({ has_more: false, next_cursor: null, thread_replies_in_channel: false });
  });

  it('pages the channel window with a composite cursor', async () => {
    const first = (await post(alice, '/query', [{ top_level: true, '#h': [openChannel], limit: 1 }])).body as VerifiedEvent[];
    const bounds = JSON.parse(first.find((e) => e.kind === 39006)!.content);
    expect(bounds.has_more).toBe(true);
    const next = (await post(alice, '/query', [{ top_level: true, '#h': [openChannel], limit: 1, until: bounds.next_cursor.created_at, before_id: bounds.next_cursor.id }])).body as VerifiedEvent[];
    const firstRow = first.find((e) => e.kind !== 39006)!;
    const nextRow = next.find((e) => e.kind !== 39006)!;
    expect(nextRow.id).not.toBe(firstRow.id);
    expect(nextRow.created_at).toBeLessThanOrEqual(firstRow.created_at);
    const bad = await post(alice, '/query', [{ top_level: true, '#h': [openChannel], until: 5 }]);
    expect(bad).toEqual({ status: 400, body: { error: 'top_level cursor requires both until and before_id, or neither' } });
  });

  it('serves thread replies walking forward, with aux', async () => {
    const { body } = await post(alice, '/query', [{ '#e': [root.id], depth_limit: 3, include_aux: true }]);
    const events = body as VerifiedEvent[];
    expect(events.filter((e) => e.kind === 9).map((e) => e.id)).toEqual(replies.map((r) => r.id).sort((x, y) => (replies.find((r) => r.id === x)!.created_at - replies.find((r) => r.id === y)!.created_at) || (x < y ? -1 : 1)));
    expect(events.some((e) => e.kind === 7)).toBe(true);
  });

  it('serves the three feeds', async () => {
    const mentions = (await post(alice, '/query', [{ feed_types: ['mentions'], limit: 10 }])).body as VerifiedEvent[];
    expect(mentions.map((e) => e.id).sort()).toEqual(replies.map((r) => r.id).sort());
    const answer = msg(alice, openChannel, 'answering reply 0', [['e', replies[0].id]]);
    await a.publish(answer);
    // Each read asks a different limit: a NIP-98 event repeated within the second is a replay.
    const needsAction = async (limit: number) => {
      const res = await post(alice, '/query', [{ feed_types: ['needs_action'], limit }]);
      if (!Array.isArray(res.body)) throw new Error(JSON.stringify(res));
      return (res.body as VerifiedEvent[]).map((e) => e.id).sort();
    };
    expect(await needsAction(10)).toEqual([replies[1].id, replies[2].id].sort());
    // A deleted answer answers nothing: the mention needs action again.
    const retracted = msg(alice, openChannel, 'answering reply 1', [['e', replies[1].id]]);
    await a.publish(retracted);
    expect(await needsAction(11)).toEqual([replies[2].id]);
    expect(await a.publish(alice.sign({ kind: 5, tags: [['e', retracted.id]] }))).toEqual([true, '']);
    expect(await needsAction(12)).toEqual([replies[1].id, replies[2].id].sort());
    const activity = (await post(bob, '/query', [{ feed_types: ['activity'], limit: 5 }])).body as VerifiedEvent[];
    expect(activity.length).toBe(5);
    // Channel events only. Reactions and deletions carry their target's channel without an `h`
    // tag, and the deletion above is among the newest rows when the second's ids put it there.
    const inChannel = (e: VerifiedEvent) => e.tags.some((t) => t[0] === 'h') || ((e.kind === 5 || e.kind === 7) && e.tags.some((t) => t[0] === 'e'));
    expect(activity.filter((e) => !inChannel(e))).toEqual([]);
  });

  it('searches with full text and prefixes', async () => {
    const full = (await post(bob, '/query', [{ search: 'pineapples' }])).body as VerifiedEvent[];
    expect(full.map((e) => e.id)).toEqual([root.id]);
    const prefix = (await post(bob, '/query', [{ search: 'pinea', search_mode: 'prefix' }])).body as VerifiedEvent[];
    expect(prefix.map((e) => e.id)).toEqual([root.id]);
    expect(await post(bob, '/query', [{ search: 'x' }, { kinds: [1] }])).toEqual({ status: 400, body: { error: 'mixed search and non-search filters not supported' } });
  });

  it('answers a NIP-50 search REQ once, then EOSE, with no live delivery', async () => {
    const { events, end } = await b.req('find', { search: 'pineapples', kinds: [9] });
    expect(events.map((e) => e.id)).toEqual([root.id]);
    expect(end).toEqual(['EOSE', 'find']);
    const later = msg(alice, openChannel, 'more pineapples later');
    await a.publish(later);
    await b.req('sync-search', { ids: [later.id] });
    expect(b.frames.filter((f) => f[0] === 'EVENT' && f[1] === 'find' && (f[2] as { id: string }).id === later.id)).toEqual([]);
    const mixed = await b.req('mixed', { search: 'x' }, { kinds: [1] });
    expect(mixed.end).toEqual(['CLOSED', 'mixed', 'error: mixed search and non-search filters not supported']);
  });

  it("finds a channel's reaction or comment without an h tag by #h search, on REQ, /query and COUNT", async () => {
    // A NIP-22 comment as NDK builds it carries no `h`: it lives in its parent's channel.
    const comment = bob.sign({ kind: 1111, content: 'mangosteens are the answer', tags: [['e', root.id], ['k', '9'], ['p', alice.pubkey]] });
    expect(await b.publish(comment)).toEqual([true, '']);
    const { events, end } = await b.req('find-h', { search: 'mangosteens', '#h': [openChannel] });
    expect([events.map((e) => e.id), end[0]]).toEqual([[comment.id], 'EOSE']);
    const http = (await post(bob, '/query', [{ search: 'mangosteens', '#h': [openChannel] }])).body as VerifiedEvent[];
    expect(http.map((e) => e.id)).toEqual([comment.id]);
    expect(await post(bob, '/count', [{ search: 'mangosteens', '#h': [openChannel], kinds: [1111] }])).toEqual({ status: 200, body: { count: 1 } });
    // Another channel's `#h` does not find it.
    expect((await b.req('find-other', { search: 'mangosteens', '#h': [privateChannel] })).events).toEqual([]);
  });

  it('counts over HTTP and over the WebSocket', async () => {
    expect(await post(alice, '/count', [{ '#e': [root.id], kinds: [9] }])).toEqual({ status: 200, body: { count: 3 } });
    b.send(['COUNT', 'c1', { '#e': [root.id], kinds: [9] }]);
    expect(await b.waitFor((f) => f[0] === 'COUNT' && f[1] === 'c1')).toEqual(['COUNT', 'c1', { count: 3 }]);
  });
});

describe('refusals', () => {
  it('answers bad, stale and replayed NIP-98 with the spec texts', async () => {
    const body = JSON.stringify([{ kinds: [1] }]);
    const missing = await fetch(`${relay.httpUrl}/query`, { method: 'POST', body });
    expect([missing.status, await missing.json()]).toEqual([401, { error: 'missing Nostr auth' }]);
    expect(await post(alice, '/query', [{ kinds: [1] }], 'Nostr !!!')).toEqual({ status: 401, body: { error: 'invalid base64 in Nostr auth' } });
    const wrongUrl = nip98(alice, '/query', body, { url: `${relay.httpUrl}/count` });
    expect((await post(alice, '/query', [{ kinds: [1] }], wrongUrl)).status).toBe(401);
    const stale = nip98(alice, '/query', body, { created_at: Math.floor(Date.now() / 1000) - 120 });
    expect((await post(alice, '/query', [{ kinds: [1] }], stale)).status).toBe(401);
    const once = nip98(alice, '/query', body);
    expect((await post(alice, '/query', [{ kinds: [1] }], once)).status).toBe(200);
    expect(await post(alice, '/query', [{ kinds: [1] }], once)).toEqual({ status: 401, body: { error: 'NIP-98: replay detected' } });
  });

  it('rejects a bad consistency value and serves strong reads', async () => {
    expect(await post(alice, '/query', [{ kinds: [9], consistency: 'eventual' }])).toEqual({ status: 400, body: { error: 'invalid filters: consistency must be "strong"' } });
    const strong = await post(alice, '/query', [{ '#h': [openChannel], kinds: [9], limit: 1, consistency: 'strong' }]);
    expect(strong.status).toBe(200);
    expect((strong.body as unknown[]).length).toBe(1);
  });

  it("closes a banned key's open socket as soon as the ban is written, and refuses it at AUTH", async () => {
    const m = await RawClient.authed(relay.wsUrl, mallory);
    await writer.query(`insert into bans (community_id, pubkey) select id, $1 from communities where host = 'localhost'`, [mallory.pubkey]);
    // A ban written by plain SQL reaches the socket through the buzz_bans notification.
    expect((await m.waitClosed()).code).toBe(1008);
    await expect(RawClient.authed(relay.wsUrl, mallory)).rejects.toThrow(/blocked: you are banned from this community|socket closed/);
  });

  it('applies the WebSocket quota with a retry hint', async () => {
    const carol = newIdentity();
    const c = await RawClient.authed(relay.wsUrl, carol);
    // Signed first, then sent together: the quota is a token bucket (burst 50 here, refilled at
    // 50/s), so the frames must arrive faster than it refills.
    const events = Array.from({ length: 60 }, (_, i) => carol.sign({ kind: 1, content: `q${i}` }));
    const results = await Promise.all(events.map((ev) => c.publish(ev)));
    const limited = results.filter(([ok]) => !ok);
    expect(limited.length).toBeGreaterThan(0);
    expect(limited[0][1]).toMatch(/^rate-limited: quota exceeded; retry in \d+s$/);
    c.close();
  });
});

describe('pool checkouts', () => {
  it('labels the writer-only reads authentication, tenant_resolution and authorization', async () => {
    const metrics = await (await fetch(relay.metricsUrl)).text();
    for (const operation of ['authentication', 'tenant_resolution', 'authorization']) {
      const line = metrics.split('\n').find((l) => l.startsWith('buzz_db_pool_acquire_started_total') && l.includes('pool_role="writer"') && l.includes(`operation="${operation}"`));
      expect(line).toBeDefined();
      expect(Number(line!.split(' ').pop())).toBeGreaterThan(0);
    }
  });
});

describe('tenant isolation', () => {
  it('never shows community A’s rows to community B, on any branch', async () => {
    await writer.query(`insert into communities (host, name) values ('127.0.0.1', 'other')`);
    const bUrl = relay.wsUrl.replace('localhost', '127.0.0.1');
    const other = newIdentity();
    const oc = await RawClient.authed(bUrl, other);
    const mine = other.sign({ kind: 1, content: 'only in B pineapples' });
    expect(await oc.publish(mine)).toEqual([true, '']);
    const reqAll = await oc.req('all', { limit: 1000 });
    expect(reqAll.events.map((e) => e.id)).toEqual([mine.id]);
    const body = JSON.stringify([{ limit: 1000 }]);
    const httpB = await httpRequest(`${relay.httpUrl.replace('localhost', '127.0.0.1')}/query`, {
      method: 'POST',
      headers: { host: relay.httpUrl.replace('http://localhost', '127.0.0.1'), authorization: nip98(other, '/query', body, { url: `${relay.httpUrl.replace('localhost', '127.0.0.1')}/query` }) },
      body,
    });
    expect(httpB.status).toBe(200);
    expect((JSON.parse(httpB.body) as VerifiedEvent[]).map((e) => e.id)).toEqual([mine.id]);
    const searchA = (await post(alice, '/query', [{ search: 'pineapples' }])).body as VerifiedEvent[];
    expect(searchA.map((e) => e.id)).not.toContain(mine.id);
    const countA = await post(alice, '/count', [{ authors: [other.pubkey] }]);
    expect(countA.body).toEqual({ count: 0 });
    expect(wire(reqAll.events[0])).toEqual(wire(mine));
    oc.close();
  });
});
