/**
 * COUNT and `/count` with `search` (relay.md §2.10 "fallback", §3.8), end to end on the real writer
 * + replica pair: the count is the full-text candidates that also pass the rest of the filter
 * (ids, tags, authors, times), summed over filters; more than 5,000 candidates is refused on both
 * transports and counted in `buzz_count_fallback_rejections_total`; each such filter is one routed
 * read under the fallback's path label.
 */
import { randomBytes } from 'node:crypto';
import { httpRequest, newIdentity, RawClient } from '../harness/nostr-clients.js';
import { RelayFixture, startRelayFixture } from '../harness/relay-fixture.js';
import { metricSum } from '../harness/relay-metrics.js';
import { COUNT_FALLBACK_MAX_ROWS } from '../../src/events/count.service.js';

let fixture: RelayFixture;
let client: RawClient;
const alice = newIdentity();
const now = Math.floor(Date.now() / 1000);
const ids: string[] = [];
/** Rows stored straight into the writer, each with the word `harbour`: one more than a count may read. */
const BULK = COUNT_FALLBACK_MAX_ROWS + 1;

beforeAll(async () => {
  fixture = await startRelayFixture({
    BUZZ_REQUIRE_AUTH_TOKEN: 'false', // `/count` as a reader through the X-Pubkey development header
    BUZZ_REPLICA_READ_MAX_AGE_MS: '30000',
    BUZZ_RATE_LIMIT_HUMAN_WS_EVENTS_PER_SEC: '1000',
  });
  client = await RawClient.authed(fixture.relay.wsUrl, alice);
  // Six notes with `lantern`, three of them tagged `t=sea`, and one note without the word.
  for (let i = 0; i < 6; i++) {
    const ev = alice.sign({ kind: 1, created_at: now - 100 + i, content: `a lantern by the water ${i}`, tags: i % 2 === 0 ? [['t', 'sea']] : [] });
    expect(await client.publish(ev)).toEqual([true, '']);
    ids.push(ev.id);
  }
  expect(await client.publish(alice.sign({ kind: 1, created_at: now - 50, content: 'nothing to see', tags: [['t', 'sea']] }))).toEqual([true, '']);
  const { rows } = await fixture.writer.query<{ id: string }>(`select id from communities where host = 'localhost'`);
  await fixture.writer.query(
    `insert into events (community_id, id, pubkey, created_at, kind, tags, content, sig)
     select $1, decode(md5('harbour' || g) || md5('bulk' || g), 'hex'), $2, now() - (g || ' seconds')::interval, 1, '[]', 'the harbour at dusk ' || g, $3
       from generate_series(1, $4) g`,
    [rows[0].id, Buffer.from(alice.pubkey, 'hex'), randomBytes(64), BULK],
  );
}, 60_000);

afterAll(async () => {
  await client?.close();
  await fixture?.close();
});

async function wsCount(...filters: object[]): Promise<unknown[]> {
  const sub = `c-${randomBytes(4).toString('hex')}`;
  const from = client.frames.length;
  client.send(['COUNT', sub, ...filters]);
  return client.waitFor((f) => (f[0] === 'COUNT' || f[0] === 'CLOSED') && f[1] === sub, 10_000, from);
}

async function httpCount(...filters: object[]): Promise<{ status: number; body: unknown }> {
  const res = await httpRequest(`${fixture.relay.httpUrl}/count`, { method: 'POST', headers: { 'x-pubkey': alice.pubkey }, body: JSON.stringify(filters) });
  return { status: res.status, body: JSON.parse(res.body) };
}

const fallbackReads = () => metricSum(fixture.relay.metricsUrl, 'buzz_db_route_decision', { path: 'count_req_fallback' });

describe('COUNT with search', () => {
  it('counts the matches that pass the rest of the filter, summed over filters, one routed read each', async () => {
    const before = await fallbackReads();
    expect(await wsCount({ kinds: [1], search: 'lantern' })).toEqual(['COUNT', expect.any(String), { count: 6 }]);
    // Tags, ids and times are not part of the full-text match: they are checked on its candidates.
    expect(await wsCount({ kinds: [1], search: 'lantern', '#t': ['sea'] })).toEqual(['COUNT', expect.any(String), { count: 3 }]);
    expect(await wsCount({ kinds: [1], search: 'lantern', ids: [ids[1], ids[2]] })).toEqual(['COUNT', expect.any(String), { count: 2 }]);
    expect(await wsCount({ kinds: [1], search: 'lantern', since: now - 97 })).toEqual(['COUNT', expect.any(String), { count: 3 }]);
    expect(await wsCount({ kinds: [1], search: 'lantern', '#t': ['sea'] }, { kinds: [1], search: 'water' })).toEqual(['COUNT', expect.any(String), { count: 9 }]);
    expect(await wsCount({ kinds: [1], search: 'lantern', authors: [newIdentity().pubkey] })).toEqual(['COUNT', expect.any(String), { count: 0 }]);
    expect(await fallbackReads()).toBe(before + 7);
  });

  it('refuses a filter with more than 5,000 candidates, and counts one narrowed to fewer', async () => {
    const refusals = await metricSum(fixture.relay.metricsUrl, 'buzz_count_fallback_rejections_total');
    expect(await wsCount({ kinds: [1], search: 'harbour' })).toEqual(['CLOSED', expect.any(String), 'restricted: count filter requires narrower constraints']);
    expect(await metricSum(fixture.relay.metricsUrl, 'buzz_count_fallback_rejections_total')).toBe(refusals + 1);
    // Exactly the limit's worth of candidates is counted: the newest 5,000 of the 5,001.
    const newest = await fixture.writer.query<{ t: string }>(
      `select floor(extract(epoch from created_at))::bigint as t from events where content like 'the harbour%' order by created_at desc offset $1 limit 1`,
      [COUNT_FALLBACK_MAX_ROWS - 1],
    );
    expect(await wsCount({ kinds: [1], search: 'harbour', since: Number(newest.rows[0].t) })).toEqual(['COUNT', expect.any(String), { count: COUNT_FALLBACK_MAX_ROWS }]);
  });
});

describe('/count with search', () => {
  it('answers the same counts as COUNT', async () => {
    expect(await httpCount({ kinds: [1], search: 'lantern', '#t': ['sea'] })).toEqual({ status: 200, body: { count: 3 } });
    expect(await httpCount({ kinds: [1], search: 'lantern' }, { kinds: [1], search: 'nothing' })).toEqual({ status: 200, body: { count: 7 } });
  });

  it('refuses more than 5,000 candidates with a 400', async () => {
    expect(await httpCount({ kinds: [1], search: 'harbour' })).toEqual({ status: 400, body: { error: 'count filter requires narrower constraints' } });
  });
});
