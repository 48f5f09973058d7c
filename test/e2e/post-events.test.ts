/**
 * `POST /events` (relay.md §3.2, issue 18 item 5) on the real writer + replica pair: a signed event
 * sent with NIP-98 goes through the WebSocket's ingest pipeline and answers its `OK` as JSON, 200
 * `{"event_id","accepted","message"}`, or `{"error"}` with the status of the refusal's prefix.
 * A stored event is readable at once through `/query` and reaches live WebSocket subscribers.
 */
import { createHash, randomUUID } from 'node:crypto';
import { Pool } from 'pg';
import { finalizeEvent, type VerifiedEvent } from 'nostr-tools/pure';
import { Identity, newIdentity, nip98Header, RawClient, wire } from '../harness/nostr-clients.js';
import { RelayFixture, startRelayFixture } from '../harness/relay-fixture.js';

/** Each test signs with its own keys, so this quota is spent only where a test means to. */
const MESSAGES_PER_MIN = 5;
const LOCK_TIMEOUT_MS = 300;

let fixture: RelayFixture;
const clients: RawClient[] = [];

beforeAll(async () => {
  fixture = await startRelayFixture({
    BUZZ_RATE_LIMIT_HUMAN_MESSAGES_PER_MIN: String(MESSAGES_PER_MIN),
    BUZZ_DB_LOCK_TIMEOUT_MS: String(LOCK_TIMEOUT_MS),
  });
});

afterAll(async () => {
  for (const c of clients) c.close();
  await fixture?.close();
});

interface Answer {
  readonly status: number;
  readonly body: Record<string, unknown>;
}

function eventsUrl(): string {
  return `${fixture.relay.httpUrl}/events`;
}

/** POSTs `body` (default: the event as JSON) to /events, signed for by `signer` unless `auth` is given. */
async function post(signer: Identity, event: unknown, opts: { body?: string; auth?: string; path?: string } = {}): Promise<Answer> {
  const body = opts.body ?? JSON.stringify(event);
  const auth = opts.auth ?? nip98Header(signer, eventsUrl(), body, undefined, true);
  const res = await fetch(`${fixture.relay.httpUrl}${opts.path ?? '/events'}`, { method: 'POST', headers: { authorization: auth }, body });
  const text = await res.text();
  let parsed: Record<string, unknown>;
  try {
    parsed = JSON.parse(text) as Record<string, unknown>;
  } catch {
    parsed = { text };
  }
  return { status: res.status, body: parsed };
}

async function query(reader: Identity, filter: object): Promise<VerifiedEvent[]> {
  const body = JSON.stringify([filter]);
  const url = `${fixture.relay.httpUrl}/query`;
  const res = await fetch(url, { method: 'POST', headers: { authorization: nip98Header(reader, url, body, undefined, true) }, body });
  expect(res.status).toBe(200);
  return (await res.json()) as VerifiedEvent[];
}

async function stored(id: string): Promise<boolean> {
  const r = await fixture.writer.query('select 1 from events where id = $1', [Buffer.from(id, 'hex')]);
  return (r.rowCount ?? 0) > 0;
}

async function subscriber(id: Identity, subId: string, filter: object): Promise<RawClient> {
  const c = await RawClient.authed(fixture.relay.wsUrl, id);
  clients.push(c);
  expect((await c.req(subId, filter)).end).toEqual(['EOSE', subId]);
  return c;
}

/** A NIP-98 header with the given tags instead of the usual ones. */
function nip98With(signer: Identity, tags: string[][]): string {
  const ev = finalizeEvent({ kind: 27235, created_at: Math.floor(Date.now() / 1000), tags: [...tags, ['nonce', randomUUID()]], content: '' }, signer.sk);
  return `Nostr ${Buffer.from(JSON.stringify(ev)).toString('base64')}`;
}

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

describe('POST /events stores through the ingest pipeline', () => {
  it('answers 200 accepted, and the event is on /query and reaches a live WebSocket subscriber', async () => {
    const alice = newIdentity();
    const bob = newIdentity();
    const live = await subscriber(bob, 'alice', { kinds: [1], authors: [alice.pubkey] });
    const note = alice.sign({ kind: 1, content: 'posted over HTTP' });

    expect(await post(alice, note)).toEqual({ status: 200, body: { event_id: note.id, accepted: true, message: '' } });

    const delivered = await live.waitFor((f) => f[0] === 'EVENT' && f[1] === 'alice');
    expect(delivered[2]).toEqual(wire(note));
    expect((await query(bob, { ids: [note.id] })).map((e) => e.id)).toEqual([note.id]);
  });

  it('answers a second copy with 200 accepted "duplicate:" and does not deliver it again', async () => {
    const carol = newIdentity();
    const live = await subscriber(newIdentity(), 'carol', { kinds: [1], authors: [carol.pubkey] });
    const note = carol.sign({ kind: 1, content: 'twice' });
    expect((await post(carol, note)).status).toBe(200);
    await live.waitFor((f) => f[0] === 'EVENT' && f[1] === 'carol');

    expect(await post(carol, note)).toEqual({ status: 200, body: { event_id: note.id, accepted: true, message: 'duplicate:' } });
    // A marker sent after the duplicate arrives alone: the duplicate was not fanned out.
    const marker = carol.sign({ kind: 1, content: 'marker' });
    expect((await post(carol, marker)).status).toBe(200);
    await live.waitFor((f) => f[0] === 'EVENT' && (f[2] as { id: string }).id === marker.id);
    expect(live.frames.filter((f) => f[0] === 'EVENT').map((f) => (f[2] as { id: string }).id)).toEqual([note.id, marker.id]);
  });

  it('takes the same event the WebSocket took as a duplicate (one pipeline, one store)', async () => {
    const dave = newIdentity();
    const ws = await subscriber(dave, 'x', { ids: ['0'.repeat(64)] });
    const note = dave.sign({ kind: 1, content: 'first over WebSocket' });
    expect(await ws.publish(note)).toEqual([true, '']);
    expect(await post(dave, note)).toEqual({ status: 200, body: { event_id: note.id, accepted: true, message: 'duplicate:' } });
  });
});

describe('POST /events refuses what the WebSocket refuses, with an HTTP status', () => {
  it('a bad signature: 400 invalid:, nothing stored', async () => {
    const erin = newIdentity();
    const note = wire(erin.sign({ kind: 1, content: 'tampered' }));
    const forged = { ...note, sig: note.sig.replace(/^./, (c) => (c === '0' ? '1' : '0')) };
    const res = await post(erin, forged);
    expect(res.status).toBe(400);
    expect(res.body.error).toMatch(/^invalid: /);
    expect(await stored(note.id)).toBe(false);
  });

  it('an event signed by another key than the request: 400', async () => {
    const frank = newIdentity();
    const note = newIdentity().sign({ kind: 1, content: 'not mine' });
    expect(await post(frank, note)).toEqual({ status: 400, body: { error: 'invalid: event pubkey does not match authenticated identity' } });
    expect(await stored(note.id)).toBe(false);
  });

  it('a body that is not JSON: 400 invalid event JSON', async () => {
    const res = await post(newIdentity(), undefined, { body: '{"kind": 1,' });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatch(/^invalid event JSON: /);
  });

  it('an array body (a WebSocket frame, or a list of events): 400 saying one event object is wanted, nothing stored', async () => {
    const hal = newIdentity();
    const note = hal.sign({ kind: 1, content: 'framed' });
    for (const body of [JSON.stringify(['EVENT', note]), JSON.stringify([note]), '"text"']) {
      expect(await post(hal, undefined, { body })).toEqual({ status: 400, body: { error: 'invalid: the body must be one event object (not an array)' } });
    }
    expect(await stored(note.id)).toBe(false);
  });

  it.each([1059, 20001])('kind %p: 400, only accepted via WebSocket', async (kind) => {
    const gus = newIdentity();
    const ev = gus.sign({ kind, content: kind === 20001 ? 'online' : 'sealed', tags: kind === 1059 ? [['p', newIdentity().pubkey]] : [] });
    expect(await post(gus, ev)).toEqual({ status: 400, body: { error: `invalid: kind ${kind} is only accepted via WebSocket` } });
    expect(await stored(ev.id)).toBe(false);
  });

  it('a relay-only kind, and a channel the author is not in: 403 restricted:', async () => {
    const hal = newIdentity();
    const channel = randomUUID();
    const list = hal.sign({ kind: 13534, tags: [['-']] });
    expect(await post(hal, list)).toEqual({ status: 403, body: { error: 'restricted: relay-only kind' } });
    const msg = hal.sign({ kind: 9, content: 'hello', tags: [['h', channel]] });
    expect(await post(hal, msg)).toEqual({ status: 403, body: { error: 'restricted: not a channel member' } });
  });

  it('a banned key: 403 blocked, nothing stored; another key is served', async () => {
    const mallory = newIdentity();
    await fixture.writer.query(`insert into bans (community_id, pubkey) select id, $1 from communities where host = 'localhost'`, [mallory.pubkey]);
    const note = mallory.sign({ kind: 1, content: 'banned' });
    expect(await post(mallory, note)).toEqual({ status: 403, body: { error: 'blocked: you are banned from this community' } });
    expect(await stored(note.id)).toBe(false);
    const other = newIdentity();
    expect((await post(other, other.sign({ kind: 1, content: 'fine' }))).status).toBe(200);
  });

  it('a body over 1 MiB is refused by the framework (413); content over 256 KiB is 400 invalid:', async () => {
    const ivy = newIdentity();
    const huge = ivy.sign({ kind: 1, content: 'x'.repeat(1024 * 1024) });
    const tooBig = await post(ivy, huge);
    expect(tooBig.status).toBe(413);
    expect(await stored(huge.id)).toBe(false);

    const big = ivy.sign({ kind: 1, content: 'x'.repeat(262_145) });
    expect(await post(ivy, big)).toEqual({ status: 400, body: { error: 'invalid: content exceeds maximum size of 262144 bytes (got 262145)' } });
  });

  it('a key over the messages quota: 429 rate-limited (the quota WebSocket EVENT spends too)', async () => {
    const jay = newIdentity();
    for (let i = 0; i < MESSAGES_PER_MIN; i++) expect((await post(jay, jay.sign({ kind: 1, content: `n${i}` }))).status).toBe(200);
    const over = await post(jay, jay.sign({ kind: 1, content: 'one too many' }));
    expect(over.status).toBe(429);
    expect(over.body.error).toMatch(/^rate-limited: quota exceeded; retry in \d+s$/);
  });

  it('a database failure is the filter’s 500, nothing stored, and the same event is accepted afterwards', async () => {
    const kim = newIdentity();
    const note = kim.sign({ kind: 1, content: 'blocked by a lock' });
    const holder = new Pool({ connectionString: fixture.db.writerUrl, max: 1 });
    const conn = await holder.connect();
    try {
      await conn.query('begin');
      await conn.query('lock table events in access exclusive mode');
      expect(await post(kim, note)).toEqual({ status: 500, body: { error: 'internal server error' } });
    } finally {
      await conn.query('rollback');
      conn.release();
      await holder.end();
    }
    expect(await stored(note.id)).toBe(false);
    expect((await post(kim, note)).body).toEqual({ event_id: note.id, accepted: true, message: '' });
  });
});

describe('POST /events NIP-98', () => {
  const url = () => eventsUrl();

  it.each<[string, (s: Identity, body: string) => string, string]>([
    ['no header', () => '', 'missing Nostr auth'],
    ['another path', (s, body) => nip98With(s, [['u', url().replace('/events', '/query')], ['method', 'POST'], ['payload', sha256(body)]]), 'NIP-98: u tag does not match the request URL'],
    ['another method', (s, body) => nip98With(s, [['u', url()], ['method', 'GET'], ['payload', sha256(body)]]), 'NIP-98: method tag does not match'],
    ['another body', (s) => nip98With(s, [['u', url()], ['method', 'POST'], ['payload', sha256('{}')]]), 'NIP-98: payload hash does not match the body'],
    ['no payload tag', (s) => nip98With(s, [['u', url()], ['method', 'POST']]), 'NIP-98: missing payload tag'],
  ])('refuses %s with 401 and stores nothing', async (_name, auth, error) => {
    const lee = newIdentity();
    const note = lee.sign({ kind: 1, content: `auth: ${_name}` });
    const body = JSON.stringify(note);
    expect(await post(lee, note, { body, auth: auth(lee, body) })).toEqual({ status: 401, body: { error } });
    expect(await stored(note.id)).toBe(false);
  });

  it('refuses a replayed header with 401', async () => {
    const max = newIdentity();
    const note = max.sign({ kind: 1, content: 'once' });
    const body = JSON.stringify(note);
    const auth = nip98Header(max, url(), body, undefined, true);
    expect((await post(max, note, { body, auth })).status).toBe(200);
    expect(await post(max, note, { body, auth })).toEqual({ status: 401, body: { error: 'NIP-98: replay detected' } });
  });
});
