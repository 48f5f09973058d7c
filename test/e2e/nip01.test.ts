/**
 * NIP-01 end to end: the built relay as a child process on a real writer and
 * streaming replica, driven by nostr-tools and by a raw frame client.
 */
import { Pool } from 'pg';
import { createTestDatabase, TestDatabase } from '../harness/test-database.js';
import { authTemplate, connectNostrTools, httpRequest, newIdentity, RawClient, wire } from '../harness/nostr-clients.js';
import { RelayProcess, startRelay } from '../harness/relay-process.js';

let db: TestDatabase;
let relay: RelayProcess;
let writer: Pool;
const alice = newIdentity();
const now = () => Math.floor(Date.now() / 1000);

beforeAll(async () => {
  db = await createTestDatabase();
  relay = await startRelay({
    DATABASE_URL: db.writerUrl,
    READ_DATABASE_URL: db.readerUrl ?? '',
    BUZZ_DEFAULT_COMMUNITY_HOSTS: 'localhost,127.0.0.1',
    BUZZ_REQUIRE_AUTH_TOKEN: 'false', // the /query tests use the X-Pubkey development header
    // This suite tests protocol behaviour, not quotas (chat.test.ts covers those).
    BUZZ_RATE_LIMIT_HUMAN_WS_EVENTS_PER_SEC: '100000',
    BUZZ_RATE_LIMIT_HUMAN_MESSAGES_PER_MIN: '100000',
  });
  writer = new Pool({ connectionString: db.writerUrl, max: 2 });
  writer.on('error', () => undefined);
});

afterAll(async () => {
  await relay?.stop();
  await writer?.end();
  await db?.drop();
});

describe('publishing', () => {
  it('a nostr-tools client publishes and reads its event back', async () => {
    const client = await connectNostrTools(relay.wsUrl, alice);
    const ev = alice.sign({ kind: 1, content: 'hello buzz' });
    await expect(client.publish(ev)).resolves.toBe('');
    const got = await new Promise<unknown[]>((resolve) => {
      const events: unknown[] = [];
      const sub = client.subscribe([{ ids: [ev.id] }], {
        onevent: (e) => events.push(e),
        oneose: () => {
          sub.close();
          resolve(events);
        },
      });
    });
    expect(wire(got)).toEqual([wire(ev)]);
    client.close();
  });

  it('answers OK only after the row is committed on the writer', async () => {
    const c = await RawClient.authed(relay.wsUrl, alice);
    const ev = alice.sign({ kind: 1, content: 'durable' });
    expect(await c.publish(ev)).toEqual([true, '']);
    const { rows } = await writer.query('select content from events where id = $1', [Buffer.from(ev.id, 'hex')]);
    expect(rows).toEqual([{ content: 'durable' }]);
    c.close();
  });

  it('acknowledges a repeat as a duplicate without storing it twice', async () => {
    const c = await RawClient.authed(relay.wsUrl, alice);
    const ev = alice.sign({ kind: 1, content: 'twice' });
    expect(await c.publish(ev)).toEqual([true, '']);
    const [ok, msg] = await c.publish(ev);
    expect(ok).toBe(true);
    expect(msg).toMatch(/^duplicate:/);
    const { rows } = await writer.query('select count(*)::int as n from events where id = $1', [Buffer.from(ev.id, 'hex')]);
    expect(rows[0].n).toBe(1);
    c.close();
  });

  it('stores each of many concurrent events exactly once (grouped commits)', async () => {
    const c = await RawClient.authed(relay.wsUrl, alice);
    const evs = Array.from({ length: 200 }, (_, i) => alice.sign({ kind: 1, content: `burst ${i}` }));
    const results = await Promise.all(evs.map((e) => c.publish(e)));
    expect(results.every(([ok, msg]) => ok && msg === '')).toBe(true);
    const { rows } = await writer.query('select count(*)::int as n from events where id = any($1::bytea[])', [evs.map((e) => Buffer.from(e.id, 'hex'))]);
    expect(rows[0].n).toBe(200);
    c.close();
  });

  it.each([
    ['a bad signature', (e: Record<string, unknown>) => ({ ...e, sig: (e.sig as string).replace(/^./, (ch) => (ch === '0' ? '1' : '0')) }), /^invalid: /],
    ['a bad id', (e: Record<string, unknown>) => ({ ...e, content: 'tampered' }), /^invalid: /],
    ['a malformed pubkey', (e: Record<string, unknown>) => ({ ...e, pubkey: 'xyz' }), /^invalid: /],
  ])('rejects %s with an invalid: reason and stores nothing', async (_name, mutate, reason) => {
    const c = await RawClient.authed(relay.wsUrl, alice);
    const ev = mutate(wire(alice.sign({ kind: 1, content: 'original' })) as unknown as Record<string, unknown>);
    const from = c.frames.length;
    c.send(['EVENT', ev]);
    const ok = await c.waitFor((f) => f[0] === 'OK', 5000, from);
    expect(ok[2]).toBe(false);
    expect(ok[3]).toMatch(reason);
    const { rows } = await writer.query(`select count(*)::int as n from events where content = 'tampered'`);
    expect(rows[0].n).toBe(0);
    c.close();
  });

  it('rejects a timestamp outside ±900 s', async () => {
    const c = await RawClient.authed(relay.wsUrl, alice);
    expect(await c.publish(alice.sign({ kind: 1, content: 'old', created_at: now() - 901 }))).toEqual([false, 'invalid: event timestamp too far from server time']);
    expect(await c.publish(alice.sign({ kind: 1, content: 'future', created_at: now() + 901 }))).toEqual([false, 'invalid: event timestamp too far from server time']);
    c.close();
  });

  it('rejects oversized content with the size in the reason', async () => {
    const c = await RawClient.authed(relay.wsUrl, alice);
    const [ok, msg] = await c.publish(alice.sign({ kind: 1, content: 'x'.repeat(262_145) }));
    expect(ok).toBe(false);
    expect(msg).toBe('invalid: content exceeds maximum size of 262144 bytes (got 262145)');
    c.close();
  });

  it('refuses a stored kind the relay does not know, and stores none of it; unknown ephemeral kinds still fan out', async () => {
    const c = await RawClient.authed(relay.wsUrl, alice);
    const unknown = alice.sign({ kind: 12345, content: 'mystery' });
    expect(await c.publish(unknown)).toEqual([false, 'restricted: unknown event kind']);
    expect(await c.publish(alice.sign({ kind: 31999, tags: [['d', 'x']], content: 'mystery' }))).toEqual([false, 'restricted: unknown event kind']);
    expect(await c.publish(alice.sign({ kind: 21000, content: 'ephemeral' }))).toEqual([true, '']);
    const { rows } = await writer.query(`select count(*)::int as n from events where content in ('mystery', 'ephemeral')`);
    expect(rows[0].n).toBe(0);
    c.close();
  });

  it('refuses EVENT from a connection whose AUTH failed and an event signed by another key', async () => {
    // An EVENT sent before AUTH waits for its outcome (test/e2e/auth-hold.test.ts); a failed AUTH refuses it.
    const anon = await RawClient.connect(relay.wsUrl);
    const ev = alice.sign({ kind: 1, content: 'anon' });
    anon.send(['EVENT', ev]);
    const badAuth = alice.sign(authTemplate('not-the-challenge', relay.wsUrl));
    anon.send(['AUTH', badAuth]);
    const ok = await anon.waitFor((f) => f[0] === 'OK' && f[1] === ev.id);
    expect(ok).toEqual(['OK', ev.id, false, 'auth-required: not authenticated']);
    // The AUTH's own answer says what was wrong with it.
    expect(await anon.waitFor((f) => f[0] === 'OK' && f[1] === badAuth.id)).toEqual(['OK', badAuth.id, false, "auth-required: verification failed: challenge tag does not match this connection's challenge"]);
    const other = await RawClient.connect(relay.wsUrl);
    const elsewhere = alice.sign(authTemplate(other.challenge, 'ws://elsewhere.example/'));
    other.send(['AUTH', elsewhere]);
    const wrongRelay = await other.waitFor((f) => f[0] === 'OK' && f[1] === elsewhere.id);
    other.close();
    expect(wrongRelay[3]).toMatch(/^auth-required: verification failed: relay tag must name this relay \(ws:\/\/(localhost|127\.0\.0\.1):\d+\/\)$/);
    expect(await anon.publish(alice.sign({ kind: 1, content: 'anon again' }))).toEqual([false, 'auth-required: not authenticated']);
    anon.close();
    const c = await RawClient.authed(relay.wsUrl, alice);
    const bob = newIdentity();
    expect(await c.publish(bob.sign({ kind: 1, content: 'spoof' }))).toEqual([false, 'invalid: event pubkey does not match authenticated identity']);
    c.close();
  });
});

describe('replaceable, addressable and deletion', () => {
  it('keeps only the newest replaceable event and refuses an older one', async () => {
    const c = await RawClient.authed(relay.wsUrl, alice);
    const t = now();
    const v1 = alice.sign({ kind: 0, content: '{"name":"a1"}', created_at: t - 10 });
    const v2 = alice.sign({ kind: 0, content: '{"name":"a2"}', created_at: t - 5 });
    const stale = alice.sign({ kind: 0, content: '{"name":"a0"}', created_at: t - 20 });
    expect((await c.publish(v1))[0]).toBe(true);
    expect((await c.publish(v2))[0]).toBe(true);
    const [ok, msg] = await c.publish(stale);
    expect(ok).toBe(false);
    expect(msg).toMatch(/^duplicate:/);
    const { events } = await c.req('profile', { kinds: [0], authors: [alice.pubkey] });
    expect(events.map((e) => e.id)).toEqual([v2.id]);
    c.close();
  });

  it('replaces addressable events per d tag', async () => {
    const c = await RawClient.authed(relay.wsUrl, alice);
    const t = now();
    const a1 = alice.sign({ kind: 30078, tags: [['d', 'settings']], content: 'one', created_at: t - 3 });
    const a2 = alice.sign({ kind: 30078, tags: [['d', 'settings']], content: 'two', created_at: t - 2 });
    const other = alice.sign({ kind: 30078, tags: [['d', 'other']], content: 'keep', created_at: t - 1 });
    for (const e of [a1, a2, other]) expect((await c.publish(e))[0]).toBe(true);
    const { events } = await c.req('addr', { kinds: [30078], authors: [alice.pubkey] });
    expect(events.map((e) => e.content).sort()).toEqual(['keep', 'two']);
    const { events: byD } = await c.req('addr-d', { kinds: [30078], authors: [alice.pubkey], '#d': ['settings'] });
    expect(byD.map((e) => e.id)).toEqual([a2.id]);
    c.close();
  });

  it('soft-deletes the author’s target on NIP-09 and keeps other authors’ events', async () => {
    const c = await RawClient.authed(relay.wsUrl, alice);
    const target = alice.sign({ kind: 1, content: 'delete me' });
    expect((await c.publish(target))[0]).toBe(true);
    const bob = newIdentity();
    const bc = await RawClient.authed(relay.wsUrl, bob);
    const bobs = bob.sign({ kind: 1, content: 'bob stays' });
    expect((await bc.publish(bobs))[0]).toBe(true);
    // One target per deletion (relay.md §1.3): two are refused, then each is deleted on its own.
    const both = alice.sign({ kind: 5, tags: [['e', target.id], ['e', bobs.id]] });
    expect(await c.publish(both)).toEqual([false, 'invalid: deletion must have exactly one e or a target (got 2)']);
    expect(await c.publish(alice.sign({ kind: 5, tags: [['e', target.id]] }))).toEqual([true, '']);
    expect(await c.publish(alice.sign({ kind: 5, tags: [['e', bobs.id]] }))).toEqual([true, '']);
    const { events } = await c.req('after-delete', { ids: [target.id, bobs.id] });
    expect(events.map((e) => e.id)).toEqual([bobs.id]);
    const { rows } = await writer.query('select deleted_at is not null as deleted from events where id = $1', [Buffer.from(target.id, 'hex')]);
    expect(rows).toEqual([{ deleted: true }]);
    c.close();
    bc.close();
  });
});

describe('REQ', () => {
  it('filters by tag, orders created_at DESC then id ASC, honours since/until/limit', async () => {
    const c = await RawClient.authed(relay.wsUrl, alice);
    const base = now() - 100;
    const topic = `topic-${Math.random().toString(36).slice(2)}`;
    const evs = [0, 1, 2, 3, 4].map((i) => alice.sign({ kind: 1, content: `t${i}`, created_at: base + i, tags: [['t', topic]] }));
    const sameSecond = [alice.sign({ kind: 1, content: 's1', created_at: base + 2, tags: [['t', topic]] })];
    for (const e of [...evs, ...sameSecond]) expect((await c.publish(e))[0]).toBe(true);
    const all = await c.req('all', { '#t': [topic] });
    const expected = [...evs, ...sameSecond].sort((a, b) => b.created_at - a.created_at || (a.id < b.id ? -1 : 1));
    expect(all.events.map((e) => e.id)).toEqual(expected.map((e) => e.id));
    expect(all.end).toEqual(['EOSE', 'all']);
    const window = await c.req('window', { '#t': [topic], since: base + 1, until: base + 3 });
    expect(window.events.map((e) => e.created_at)).toEqual([base + 3, base + 2, base + 2, base + 1]);
    const limited = await c.req('limited', { '#t': [topic], limit: 2 });
    expect(limited.events.map((e) => e.id)).toEqual(expected.slice(0, 2).map((e) => e.id));
    const none = await c.req('none', { '#t': [topic], kinds: [] });
    expect(none.events).toEqual([]);
    c.close();
  });

  it('matches tags by position before LIMIT (a reversed pair is not a match)', async () => {
    const c = await RawClient.authed(relay.wsUrl, alice);
    const topic = `pos-${Math.random().toString(36).slice(2)}`;
    const real = alice.sign({ kind: 1, content: 'real', created_at: now() - 10, tags: [['t', topic]] });
    const reversed = alice.sign({ kind: 1, content: 'reversed', created_at: now() - 5, tags: [[topic, 't']] });
    expect((await c.publish(real))[0]).toBe(true);
    expect((await c.publish(reversed))[0]).toBe(true);
    const { events } = await c.req('pos', { '#t': [topic], limit: 1 });
    expect(events.map((e) => e.id)).toEqual([real.id]);
    c.send(['COUNT', 'pos-n', { '#t': [topic] }]);
    expect(await c.waitFor((f) => f[0] === 'COUNT' && f[1] === 'pos-n')).toEqual(['COUNT', 'pos-n', { count: 1 }]);
    c.close();
  });

  it('serves #e filters through the fenced form, newest first', async () => {
    const c = await RawClient.authed(relay.wsUrl, alice);
    const target = alice.sign({ kind: 1, content: 'target' });
    await c.publish(target);
    const refs = [0, 1, 2].map((i) => alice.sign({ kind: 1, content: `ref ${i}`, created_at: now() - 30 + i, tags: [['e', target.id]] }));
    for (const r of refs) await c.publish(r);
    const { events, end } = await c.req('etag', { '#e': [target.id], limit: 2 });
    expect(end[0]).toBe('EOSE');
    expect(events.map((e) => e.id)).toEqual([refs[2].id, refs[1].id]);
    c.close();
  });

  it('delivers live events to a matching subscription only', async () => {
    const reader = await RawClient.authed(relay.wsUrl, newIdentity());
    const topic = `live-${Math.random().toString(36).slice(2)}`;
    const { end } = await reader.req('live', { '#t': [topic] });
    expect(end[0]).toBe('EOSE');
    const w = await RawClient.authed(relay.wsUrl, alice);
    const match = alice.sign({ kind: 1, content: 'match', tags: [['t', topic]] });
    const miss = alice.sign({ kind: 1, content: 'miss', tags: [['t', 'other']] });
    await w.publish(miss);
    await w.publish(match);
    const got = await reader.waitFor((f) => f[0] === 'EVENT' && f[1] === 'live');
    expect((got[2] as { id: string }).id).toBe(match.id);
    expect(reader.frames.filter((f) => f[0] === 'EVENT' && (f[2] as { id: string }).id === miss.id)).toEqual([]);
    reader.close();
    w.close();
  });

  it('acknowledges CLOSE with CLOSED and stops live delivery', async () => {
    const reader = await RawClient.authed(relay.wsUrl, newIdentity());
    const topic = `close-${Math.random().toString(36).slice(2)}`;
    await reader.req('s', { '#t': [topic] });
    reader.send(['CLOSE', 's']);
    expect(await reader.waitFor((f) => f[0] === 'CLOSED')).toEqual(['CLOSED', 's', '']);
    const w = await RawClient.authed(relay.wsUrl, alice);
    const ev = alice.sign({ kind: 1, content: 'after close', tags: [['t', topic]] });
    await w.publish(ev);
    // A later subscription on the same socket proves the relay processed the publish first.
    const probe = await reader.req('probe', { ids: [ev.id] });
    expect(probe.events.map((e) => e.id)).toEqual([ev.id]);
    expect(reader.frames.filter((f) => f[0] === 'EVENT' && f[1] === 's')).toEqual([]);
    reader.close();
    w.close();
  });

  it('refuses REQ from a connection whose AUTH failed with NOTICE and CLOSED', async () => {
    const anon = await RawClient.connect(relay.wsUrl);
    anon.send(['AUTH', newIdentity().sign(authTemplate('not-the-challenge', relay.wsUrl))]);
    const { end } = await anon.req('x', { kinds: [1] });
    expect(end).toEqual(['CLOSED', 'x', 'auth-required: not authenticated']);
    expect(anon.frames).toContainEqual(['NOTICE', 'auth-required: authenticate before subscribing']);
    anon.close();
  });

  it('counts with NIP-45 COUNT', async () => {
    const c = await RawClient.authed(relay.wsUrl, alice);
    const topic = `count-${Math.random().toString(36).slice(2)}`;
    for (let i = 0; i < 3; i++) await c.publish(alice.sign({ kind: 1, content: `c${i}`, tags: [['t', topic]] }));
    c.send(['COUNT', 'n', { '#t': [topic] }]);
    expect(await c.waitFor((f) => f[0] === 'COUNT')).toEqual(['COUNT', 'n', { count: 3 }]);
    c.close();
  });
});

describe('bad frames', () => {
  it.each([
    ['not json', 'invalid message: JSON parse error'],
    ['{"an":"object"}', 'invalid message:'],
    ['["NOPE"]', 'invalid message: unknown message type: NOPE'],
    [JSON.stringify(['REQ', 'x', ...Array.from({ length: 11 }, () => ({}))]), 'invalid message: REQ contains 11 filters, maximum is 10'],
    [JSON.stringify(['REQ', 'x'.repeat(257), {}]), 'invalid message:'],
    [JSON.stringify(['REQ', 'x', { until: 5, before_id: 'zz' }]), 'before_id must be a 64-char hex event id'],
  ])('answers %s with a NOTICE and keeps the connection', async (frame, prefix) => {
    const c = await RawClient.authed(relay.wsUrl, alice);
    c.send(frame);
    const notice = await c.waitFor((f) => f[0] === 'NOTICE');
    expect(String(notice[1])).toContain(prefix);
    const { end } = await c.req('still-alive', { kinds: [1], limit: 1 });
    expect(end[0]).toBe('EOSE');
    c.close();
  });

  it('answers an oversized frame with a NOTICE naming the size, then closes', async () => {
    const c = await RawClient.authed(relay.wsUrl, alice);
    const big = JSON.stringify(['EVENT', { content: 'x'.repeat(600_000) }]);
    c.send(big);
    const notice = await c.waitFor((f) => f[0] === 'NOTICE');
    expect(notice[1]).toBe(`error: frame too large (${Buffer.byteLength(big)} bytes, limit 524288)`);
    await c.waitClosed();
  });
});

describe('HTTP', () => {
  it('serves NIP-11 with limitations on Accept: application/nostr+json', async () => {
    const res = await fetch(relay.httpUrl, { headers: { accept: 'application/nostr+json' } });
    expect(res.status).toBe(200);
    const doc = (await res.json()) as { limitation: Record<string, unknown>; supported_nips: number[]; self?: string; pubkey?: string };
    expect(doc.limitation).toMatchObject({ max_message_length: 524288, max_subscriptions: 1024, max_filters: 10, max_limit: 1000, max_subid_length: 256 });
    // Membership is not enforced and no stable key is configured here: no 43; `pubkey` and
    // `self` name this process's key (NIP-29 clients look the group state up by it).
    expect(doc.supported_nips).toEqual([1, 2, 9, 10, 11, 16, 17, 23, 25, 29, 33, 38, 42, 45, 50, 56]);
    expect(doc.self).toMatch(/^[0-9a-f]{64}$/);
    expect(doc.pubkey).toBe(doc.self);
  });

  it('answers POST /query and /count with the same filters, and 400 for a malformed body', async () => {
    const c = await RawClient.authed(relay.wsUrl, alice);
    const topic = `http-${Math.random().toString(36).slice(2)}`;
    const ev = alice.sign({ kind: 1, content: 'via http', tags: [['t', topic]] });
    await c.publish(ev);
    c.close();
    const headers = { 'content-type': 'application/json', 'x-pubkey': alice.pubkey };
    const q = await fetch(`${relay.httpUrl}/query`, { method: 'POST', headers, body: JSON.stringify([{ '#t': [topic] }]) });
    expect(q.status).toBe(200);
    expect(await q.json()).toEqual([wire(ev)]);
    const n = await fetch(`${relay.httpUrl}/count`, { method: 'POST', headers, body: JSON.stringify([{ '#t': [topic] }]) });
    expect(await n.json()).toEqual({ count: 1 });
    const bad = await fetch(`${relay.httpUrl}/query`, { method: 'POST', headers, body: '{oops' });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: string }).error).toMatch(/^invalid filters: /);
    const badConsistency = await fetch(`${relay.httpUrl}/query`, { method: 'POST', headers, body: JSON.stringify([{ consistency: 'eventual' }]) });
    expect(badConsistency.status).toBe(400);
    expect(await badConsistency.json()).toEqual({ error: 'invalid filters: consistency must be "strong"' });
  });

  it('answers an unknown Host with the tenancy 404 on HTTP and on the WebSocket upgrade', async () => {
    const res = await httpRequest(`${relay.httpUrl}/query`, { method: 'POST', headers: { host: 'nobody.example', 'x-pubkey': alice.pubkey }, body: '[]' });
    expect(res.status).toBe(404);
    expect(JSON.parse(res.body)).toEqual({ error: 'relay: no community is configured for this host' });
    await expect(RawClient.connect(relay.wsUrl, { host: 'nobody.example' })).rejects.toThrow('HTTP 404');
  });

  it('reports health, readiness with the reader state, and metrics', async () => {
    expect((await fetch(`${relay.httpUrl}/healthz`)).status).toBe(200);
    const ready = await fetch(`${relay.httpUrl}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({ status: 'ready', writer: 'reachable', reader: 'reachable' });
    const metrics = await (await fetch(relay.metricsUrl)).text();
    expect(metrics).toContain('buzz_events_stored_total');
    expect(metrics).toContain('buzz_ws_connections_active');
  });
});
