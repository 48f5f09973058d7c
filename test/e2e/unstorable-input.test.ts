/**
 * Input the relay cannot store exactly, or that Postgres would fail on, end to end on the built
 * relay with the real writer + streaming replica (issue 21, findings 7 and 8):
 * - an EVENT whose content or tags hold a NUL or an unpaired surrogate gets `OK false "invalid: …"`
 *   and nothing is stored (a lone surrogate used to be acknowledged and stored as U+FFFD, or to
 *   fail in jsonb as `error: internal server error`);
 * - a filter Postgres would fail on (since/until past its timestamp range, a NUL or an unpaired
 *   surrogate in a tag name, tag value or search) is an invalid filter: a NOTICE on WS, a 400 on
 *   HTTP, never `CLOSED "error: database error"` or a 500, which clients retry forever;
 * - text that does round-trip (astral characters, noncharacters, controls) is still accepted and
 *   comes back byte for byte, with a signature that verifies.
 */
import { Pool } from 'pg';
import { verifyEvent, type VerifiedEvent } from 'nostr-tools/pure';
import { createTestDatabase, TestDatabase } from '../harness/test-database.js';
import { Frame, newIdentity, nip98Header, RawClient } from '../harness/nostr-clients.js';
import { RelayProcess, startRelay } from '../harness/relay-process.js';

let db: TestDatabase;
let relay: RelayProcess;
let writer: Pool;
let c: RawClient;
const alice = newIdentity();
/** Largest since/until Postgres takes (`MAX_FILTER_TIMESTAMP`). */
const MAX_TIMESTAMP = 9_224_318_015_999;

beforeAll(async () => {
  db = await createTestDatabase();
  writer = new Pool({ connectionString: db.writerUrl, max: 2 });
  writer.on('error', () => undefined);
  relay = await startRelay({
    DATABASE_URL: db.writerUrl,
    READ_DATABASE_URL: db.readerUrl ?? '',
    BUZZ_DEFAULT_COMMUNITY_HOSTS: 'localhost',
    BUZZ_REQUIRE_AUTH_TOKEN: 'true',
    BUZZ_RATE_LIMIT_HUMAN_WS_EVENTS_PER_SEC: '100000',
    BUZZ_RATE_LIMIT_HUMAN_MESSAGES_PER_MIN: '100000',
    BUZZ_RATE_LIMIT_HUMAN_API_CALLS_PER_MIN: '100000',
  });
  c = await RawClient.authed(relay.wsUrl, alice);
});

afterAll(async () => {
  c?.close();
  await relay?.stop();
  await writer?.end();
  await db?.drop();
});


async function post(path: '/query' | '/count', filters: unknown): Promise<{ status: number; body: unknown }> {
  const body = JSON.stringify(filters);
  const res = await fetch(`${relay.httpUrl}${path}`, { method: 'POST', headers: { authorization: nip98Header(alice, `${relay.httpUrl}${path}`, body) }, body });
  // Parsed here, not by res.json(): fetch's objects come from another realm, and nostr-tools'
  // verifyEvent refuses anything that is not `instanceof Object` in this one.
  return { status: res.status, body: JSON.parse(await res.text()) };
}

async function storedCount(id: string): Promise<number> {
  const { rows } = await writer.query('select count(*)::int as n from events where id = $1', [Buffer.from(id, 'hex')]);
  return rows[0].n;
}

/** The seven NIP-01 fields, in a fixed order, for comparing an event read back with the one sent. */
function fields(ev: VerifiedEvent): unknown[] {
  return [ev.id, ev.pubkey, ev.created_at, ev.kind, ev.tags, ev.content, ev.sig];
}

let sub = 0;
/**
 * Sends `[verb, sub, filter]` and returns the NOTICE it drew, then proves the sub got exactly one
 * frame, its `CLOSED "invalid: …"` with the same reason (never a database error, an EOSE or a
 * COUNT), and the connection goes on: a later valid REQ gets its EOSE.
 */
async function refusedOverWs(verb: 'REQ' | 'COUNT', filter: object): Promise<string> {
  const id = `bad${++sub}`;
  const from = c.frames.length;
  c.send([verb, id, filter]);
  const notice = await c.waitFor((f) => f[0] === 'NOTICE', 5000, from);
  await c.req(`probe${sub}`, { kinds: [1], limit: 1 });
  const reason = (notice[1] as string).replace(/^invalid message: /, '');
  expect(c.frames.slice(from).filter((f: Frame) => f[1] === id)).toEqual([['CLOSED', id, `invalid: ${reason}`]]);
  return notice[1] as string;
}

describe('EVENT with text the relay cannot store exactly', () => {
  const CANNOT = 'which the relay cannot store';

  it.each<[string, { content?: string; tags?: string[][] }, string]>([
    ['a lone high surrogate in content (finding 7)', { content: 'a\ud800' }, `invalid: content contains an unpaired surrogate (U+D800), ${CANNOT}`],
    ['a lone low surrogate in content', { content: '\udc00b' }, `invalid: content contains an unpaired surrogate (U+DC00), ${CANNOT}`],
    ['a lone surrogate in a tag value (finding 7)', { content: 'x', tags: [['t', 'a\ud800']] }, `invalid: tags[0][1] contains an unpaired surrogate (U+D800), ${CANNOT}`],
    ['a lone surrogate in a tag name', { content: 'x', tags: [['t', 'ok'], ['\ud800', 'a']] }, `invalid: tags[1][0] contains an unpaired surrogate (U+D800), ${CANNOT}`],
    ['a NUL in content', { content: 'a\u0000b' }, `invalid: content contains a NUL character (U+0000), ${CANNOT}`],
    ['a NUL in a tag value', { content: 'x', tags: [['t', 'a\u0000']] }, `invalid: tags[0][1] contains a NUL character (U+0000), ${CANNOT}`],
  ])('refuses %s before OK and stores nothing', async (_label, template, reason) => {
    const ev = alice.sign({ kind: 1, ...template });
    expect(await c.publish(ev)).toEqual([false, reason]);
    expect(await storedCount(ev.id)).toBe(0);
  });

  it('accepts astral and other edge Unicode and gives it back byte for byte, verifiable', async () => {
    const edge =
      '\u{1f600} \u{1f468}\u200d\u{1f469}\u200d\u{1f467} \u{1f44d}\u{1f3fd} \u{10ffff} \u{1d11e} \ufffe\uffff\ufdd0 \ufffd ' +
      '\u0001\u001f\u007f\t\r\n \u2028\u2029 \ufeff e\u0301 \u05e9\u05dc\u05d5\u05dd "q" \\ \u00e9\u4e2d';
    const ev = alice.sign({ kind: 1, content: edge, tags: [['t', edge], [edge, 'name'], ['subject', '\u{1f680}']] });
    expect(await c.publish(ev)).toEqual([true, '']);

    const { rows } = await writer.query('select convert_to(content, $2) as bytes from events where id = $1', [Buffer.from(ev.id, 'hex'), 'UTF8']);
    expect(Buffer.compare(rows[0].bytes, Buffer.from(edge, 'utf8'))).toBe(0);

    const overWs = await c.req('edge', { ids: [ev.id] });
    expect(overWs.events.map(fields)).toEqual([fields(ev)]);
    expect(verifyEvent(overWs.events[0])).toBe(true);

    const overHttp = await post('/query', [{ ids: [ev.id] }]);
    expect(overHttp.status).toBe(200);
    const [fromHttp] = overHttp.body as VerifiedEvent[];
    expect(fields(fromHttp)).toEqual(fields(ev));
    expect(verifyEvent(fromHttp)).toBe(true);
  });
});

describe('filters Postgres would fail on (finding 8)', () => {
  it.each<[string, object, string]>([
    ['since = 2^53 - 1', { since: 9_007_199_254_740_991 }, 'since must be at most 9224318015999'],
    ['until = 2^53 - 1', { until: 9_007_199_254_740_991 }, 'until must be at most 9224318015999'],
    ['until one past the timestamp range', { kinds: [1], until: MAX_TIMESTAMP + 1 }, 'until must be at most 9224318015999'],
    ['a NUL in a tag value', { '#t': ['a\u0000'] }, '#t contains a NUL character (U+0000)'],
    ['a NUL in #e', { '#e': ['a\u0000'] }, '#e contains a NUL character (U+0000)'],
    ['a lone surrogate in #e', { kinds: [1], '#e': ['\ud800'] }, '#e contains an unpaired surrogate (U+D800)'],
    ['a NUL in a tag name', { '#\u0000': ['a'] }, 'tag filter name contains a NUL character (U+0000)'],
    ['a NUL in search', { search: 'a\u0000' }, 'search contains a NUL character (U+0000)'],
    ['a lone surrogate in search', { kinds: [1], search: 'a\ud800' }, 'search contains an unpaired surrogate (U+D800)'],
  ])('refuses %s as an invalid filter on REQ, COUNT, /query and /count', async (_label, filter, reason) => {
    expect(await refusedOverWs('REQ', filter)).toBe(`invalid message: invalid filter: ${reason}`);
    expect(await refusedOverWs('COUNT', filter)).toBe(`invalid message: invalid filter: ${reason}`);
    expect(await post('/query', [filter])).toEqual({ status: 400, body: { error: `invalid filters: filter 0: ${reason}` } });
    expect(await post('/count', [filter])).toEqual({ status: 400, body: { error: `invalid filters: filter 0: ${reason}` } });
  });

  it('refuses a thread_cursor Postgres would fail on with a 400', async () => {
    const filter = { '#e': ['a'.repeat(64)], depth_limit: 2, thread_cursor: 9_007_199_254_740_991 };
    expect(await post('/query', [filter])).toEqual({ status: 400, body: { error: 'invalid filters: thread_cursor must be unix seconds' } });
  });

  it('still serves since/until at the edge of the range and astral text in tag filters and search', async () => {
    const word = `rocket\u{1f680}${Date.now()}`;
    const ev = alice.sign({ kind: 1, content: word, tags: [['t', word]] });
    expect(await c.publish(ev)).toEqual([true, '']);
    const filters = [{ ids: [ev.id], since: 0, until: MAX_TIMESTAMP }, { kinds: [1], '#t': [word] }];
    for (const filter of filters) {
      const { events, end } = await c.req(`edge${++sub}`, filter);
      expect(end[0]).toBe('EOSE');
      expect(events.map((e) => e.id)).toEqual([ev.id]);
      expect(await post('/count', [filter])).toEqual({ status: 200, body: { count: 1 } });
    }
    const search = await post('/query', [{ search: word }]);
    expect(search.status).toBe(200);
    expect((search.body as VerifiedEvent[]).map((e) => e.id)).toEqual([ev.id]);
  });
});
