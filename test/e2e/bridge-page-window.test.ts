/**
 * Two `/query` opt-ins end to end on the real writer + replica pair: the catch-all `page`
 * (relay.md §3.3 step 6, the kind-0 people directory) and NIP-CW thread windows (§3.6b): paging
 * older with `next_cursor`, the aux closure, the relay-signed bounds overlay, the four-window cap,
 * the writer authorization read before and after, the missing-root writer re-run, the budgets and
 * the path's own timeout answer under a real lock.
 */
import { randomUUID } from 'node:crypto';
import { Pool, PoolClient } from 'pg';
import { getPublicKey, verifyEvent, type Event } from 'nostr-tools/pure';
import { httpRequest, Identity, newIdentity, RawClient } from '../harness/nostr-clients.js';
import { RelayFixture, startRelayFixture } from '../harness/relay-fixture.js';
import type { RelayProcess } from '../harness/relay-process.js';
import type { TestDatabase } from '../harness/test-database.js';

const RELAY_SECRET = '3c'.repeat(32);
const RELAY_PUBKEY = getPublicKey(Buffer.from(RELAY_SECRET, 'hex'));

let fixture: RelayFixture;
let db: TestDatabase;
let relay: RelayProcess;
let writer: Pool;
const alice = newIdentity();
const bob = newIdentity();
let a: RawClient;
let b: RawClient;

beforeAll(async () => {
  fixture = await startRelayFixture({
    BUZZ_REPLICA_READ_MAX_AGE_MS: '30000',
    BUZZ_RELAY_PRIVATE_KEY: RELAY_SECRET,
    BUZZ_REQUIRE_AUTH_TOKEN: 'false', // /query below uses the X-Pubkey development header
    BUZZ_RATE_LIMIT_HUMAN_WS_EVENTS_PER_SEC: '1000',
    BUZZ_RATE_LIMIT_HUMAN_MESSAGES_PER_MIN: '100000',
    BUZZ_RATE_LIMIT_HUMAN_API_CALLS_PER_MIN: '100000',
  });
  ({ db, relay, writer } = fixture);
  [a, b] = await Promise.all([alice, bob].map((id) => RawClient.authed(relay.wsUrl, id)));
});

afterAll(async () => {
  a?.close();
  b?.close();
  await fixture?.close();
});

/** `/query` as `id` (the relay runs with the X-Pubkey dev header; NIP-98 is covered elsewhere). */
async function query(id: Identity, filters: unknown): Promise<{ status: number; body: any }> {
  const res = await httpRequest(`${relay.httpUrl}/query`, { method: 'POST', headers: { 'x-pubkey': id.pubkey }, body: JSON.stringify(filters) });
  return { status: res.status, body: JSON.parse(res.body) };
}

async function publish(client: RawClient, ev: Event): Promise<void> {
  expect(await client.publish(ev as never)).toEqual([true, '']);
}

/** newest first, id ascending within a second: the relay's order. */
function byRelayOrder(x: Event, y: Event): number {
  return y.created_at - x.created_at || (x.id < y.id ? -1 : 1);
}

async function metric(name: string, labels: Record<string, string>): Promise<number> {
  const text = (await httpRequest(relay.metricsUrl, {})).body;
  const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  const line = text.split('\n').find((l) => (l.startsWith(`${name}{`) || l.startsWith(`${name} `)) && want.every((w) => l.includes(w)));
  return line ? Number(line.split(' ').pop()) : 0;
}

describe('catch-all page', () => {
  const people = Array.from({ length: 7 }, () => newIdentity());

  beforeAll(async () => {
    const clients = await Promise.all(people.map((id) => RawClient.authed(relay.wsUrl, id)));
    await Promise.all(clients.map((c, i) => publish(c, people[i].sign({ kind: 0, content: JSON.stringify({ name: `person ${i}` }) }))));
    for (const c of clients) c.close();
    await db.waitForReplica(); // bob's reads are bounded-stale: let the replica hold every profile
  });

  it('pages the kind-0 directory with (page-1)*limit, without gaps or repeats', async () => {
    const mine = { kinds: [0], authors: people.map((p) => p.pubkey), limit: 3 };
    const pages = await Promise.all([1, 2, 3, 4].map((page) => query(bob, [{ ...mine, page }])));
    expect(pages.map((p) => p.status)).toEqual([200, 200, 200, 200]);
    expect(pages.map((p) => p.body.length)).toEqual([3, 3, 1, 0]);
    const all = (await query(bob, [{ ...mine, limit: 7 }])).body as Event[];
    expect(pages.flatMap((p) => p.body as Event[]).map((e) => e.id)).toEqual(all.map((e) => e.id));
    expect([...all].sort(byRelayOrder).map((e) => e.id)).toEqual(all.map((e) => e.id));
    expect(new Set(all.map((e) => e.pubkey))).toEqual(new Set(people.map((p) => p.pubkey)));
  });

  it('pages e-tag reads too (the set-based form)', async () => {
    const channel = randomUUID();
    await publish(a, alice.sign({ kind: 9007, tags: [['h', channel], ['name', 'reactions']] }));
    const target = alice.sign({ kind: 9, content: 'react to me', tags: [['h', channel]] });
    await publish(a, target);
    for (const emoji of ['1', '2', '3']) await publish(a, alice.sign({ kind: 7, content: emoji, tags: [['e', target.id]] }));
    const f = { kinds: [7], '#e': [target.id], limit: 2 };
    const [p1, p2] = [(await query(alice, [{ ...f, page: 1 }])).body as Event[], (await query(alice, [{ ...f, page: 2 }])).body as Event[]];
    expect([p1.length, p2.length]).toEqual([2, 1]);
    expect(new Set([...p1, ...p2].map((e) => e.content))).toEqual(new Set(['1', '2', '3']));
  });

  it.each([
    [{ kinds: [0], limit: 3, page: 0 }, 'invalid filters: page must be an integer >= 1'],
    [{ kinds: [0], limit: 3, page: 'two' }, 'invalid filters: page must be an integer >= 1'],
    [{ kinds: [0], page: 2 }, 'invalid filters: page requires limit'],
    [{ kinds: [0], limit: 1000, page: 1000 }, 'invalid filters: page is out of range (at most 100000 rows may be skipped)'],
  ])('refuses %j with a 400', async (filter, error) => {
    expect(await query(bob, [filter])).toEqual({ status: 400, body: { error } });
  });
});

describe('thread windows', () => {
  const open = randomUUID();
  let root: Event;
  let replies: Event[];
  let rootReaction: Event;
  let newestReaction: Event;
  let oldestReaction: Event;

  /** A thread of `n` replies under a new root in `channel`, two replies per second (dense seconds). */
  async function thread(client: RawClient, id: Identity, channel: string, n: number, content = (i: number) => `reply ${i}`): Promise<{ root: Event; replies: Event[] }> {
    const base = Math.floor(Date.now() / 1000) - 200;
    // A unique root: two threads made in the same second would otherwise share an id.
    const r = id.sign({ kind: 9, content: `root ${randomUUID()}`, created_at: base, tags: [['h', channel]] });
    await publish(client, r);
    const out: Event[] = [];
    for (let i = 0; i < n; i++) {
      const reply = id.sign({ kind: 9, content: content(i), created_at: base + 1 + Math.floor(i / 2), tags: [['h', channel], ['e', r.id, '', 'root']] });
      await publish(client, reply);
      out.push(reply);
    }
    return { root: r, replies: out };
  }

  beforeAll(async () => {
    await publish(a, alice.sign({ kind: 9007, tags: [['h', open], ['name', 'threads']] }));
    ({ root, replies } = await thread(a, alice, open, 7));
    replies.sort(byRelayOrder);
    rootReaction = bob.sign({ kind: 7, content: '👀', tags: [['e', root.id]] });
    newestReaction = bob.sign({ kind: 7, content: '+', tags: [['e', replies[0].id]] });
    oldestReaction = bob.sign({ kind: 7, content: '🔥', tags: [['e', replies[6].id]] });
    for (const ev of [rootReaction, newestReaction, oldestReaction]) await publish(b, ev);
    await db.waitForReplica();
  });

  const windowFilter = (thread_window: unknown, extra: object = {}) => ({ kinds: [9], '#e': [root.id], depth_limit: 5, limit: 3, include_aux: true, thread_window, ...extra });

  function split(events: Event[]): { rows: Event[]; aux: Event[]; bounds: Event[] } {
    return { rows: events.filter((e) => e.kind === 9), aux: events.filter((e) => e.kind === 7), bounds: events.filter((e) => e.kind === 39006) };
  }

  it('walks older from the head with next_cursor, rows then aux then one signed overlay', async () => {
    const seen: Event[] = [];
    let cursor: unknown = null;
    const overlays: Array<Record<string, unknown>> = [];
    for (let page = 0; page < 3; page++) {
      const res = await query(bob, [windowFilter(page === 0 ? true : { version: 1, direction: 'older', cursor })]);
      expect(res.status).toBe(200);
      const { rows, aux, bounds } = split(res.body);
      expect(res.body.at(-1).kind).toBe(39006);
      expect(bounds).toHaveLength(1);
      expect(bounds[0].pubkey).toBe(RELAY_PUBKEY);
      expect(verifyEvent(bounds[0])).toBe(true);
      expect(bounds[0].tags).toEqual(expect.arrayContaining([['e', root.id], ['h', open]]));
      const content = JSON.parse(bounds[0].content);
      overlays.push(content);
      seen.push(...rows);
      if (page === 0) expect(aux.map((e) => e.id).sort()).toEqual([rootReaction.id, newestReaction.id].sort());
      if (page === 2) expect(aux.map((e) => e.id)).toEqual([oldestReaction.id]);
      cursor = content.next_cursor;
    }
    expect(seen.map((e) => e.id)).toEqual(replies.map((e) => e.id));
    expect(overlays).toEqual([
      { version: 1, direction: 'older', has_more: true, next_cursor: { created_at: replies[2].created_at, id: replies[2].id } },
      { version: 1, direction: 'older', has_more: true, next_cursor: { created_at: replies[5].created_at, id: replies[5].id } },
      { version: 1, direction: 'older', has_more: false, next_cursor: null },
    ]);
  });

  it('keeps the legacy forward walk when thread_window is false, and honours consistency strong', async () => {
    const legacy = await query(bob, [{ ...windowFilter(false), include_aux: false, limit: 100 }]);
    const forward = [...replies].sort((x, y) => x.created_at - y.created_at || (x.id < y.id ? -1 : 1));
    expect(legacy.body.map((e: Event) => e.id)).toEqual(forward.map((e) => e.id));
    const strong = await query(bob, [windowFilter(true, { consistency: 'strong', include_aux: false })]);
    expect(split(strong.body).rows.map((e) => e.id)).toEqual(replies.slice(0, 3).map((e) => e.id));
  });

  it('serves four windows and refuses a fifth or a malformed one with a 400', async () => {
    const four = await query(bob, Array.from({ length: 4 }, () => windowFilter(true)));
    expect(four.status).toBe(200);
    expect(split(four.body).bounds).toHaveLength(4);
    expect(await query(bob, Array.from({ length: 5 }, () => windowFilter(true)))).toEqual({ status: 400, body: { error: 'at most four thread windows per query' } });
    expect(await query(bob, [windowFilter('yes')])).toEqual({ status: 400, body: { error: 'invalid filters: thread_window must be false, true or a window request object' } });
    expect(await query(bob, [windowFilter({ cursor: { created_at: 1 } })])).toEqual({
      status: 400,
      body: { error: 'invalid filters: thread_window cursor must be {"created_at": unix seconds, "id": 64-hex event id}' },
    });
  });

  it('shows a private thread to members only', async () => {
    const priv = randomUUID();
    await publish(a, alice.sign({ kind: 9007, tags: [['h', priv], ['name', 'private'], ['visibility', 'private']] }));
    const t = await thread(a, alice, priv, 2);
    const f = { kinds: [9], '#e': [t.root.id], depth_limit: 1, thread_window: true };
    expect((await query(bob, [f])).body).toEqual([]);
    expect(split((await query(alice, [f])).body).rows).toHaveLength(2);
  });

  it('re-runs on the writer when the replica lacks the root (writer/missing_root)', async () => {
    // Warm up until the head window is served by the replica (the fence needs a few beats).
    const labels = { path: 'thread_window_head', decision: 'replica' };
    const deadline = Date.now() + 20_000;
    while ((await metric('buzz_db_route_decision', labels)) === 0) {
      if (Date.now() > deadline) throw new Error('the head window never routed to the replica');
      await query(bob, [windowFilter(true)]);
      await new Promise((r) => setTimeout(r, 200));
    }
    const missing = { path: 'thread_window_head', decision: 'writer', reason: 'missing_root' };
    const before = await metric('buzz_db_route_decision', missing);
    await db.cluster.pauseReplay();
    try {
      const fresh = await thread(a, alice, open, 2);
      const res = await query(bob, [{ kinds: [9], '#e': [fresh.root.id], depth_limit: 1, thread_window: true }]);
      expect(split(res.body).rows.map((e) => e.id).sort()).toEqual(fresh.replies.map((e) => e.id).sort());
      expect(await metric('buzz_db_route_decision', missing)).toBe(before + 1);
    } finally {
      await db.cluster.resumeReplay();
    }
  });

  describe('under a lock on thread_metadata', () => {
    let locker: PoolClient;

    beforeEach(async () => {
      locker = await writer.connect();
      await locker.query('begin');
      await locker.query('lock table thread_metadata in access exclusive mode');
    });

    afterEach(async () => {
      await locker.query('rollback').catch(() => undefined);
      locker.release();
    });

    /** Resolves once a relay backend waits on the lock (the authorization before the windows already ran). */
    async function waitForBlockedWindow(): Promise<void> {
      const deadline = Date.now() + 5000;
      for (;;) {
        const { rows } = await writer.query(
          `select count(*)::int as n from pg_stat_activity
            where datname = current_database() and wait_event_type = 'Lock' and query like '%thread_metadata%' and pid <> $1`,
          [(locker as unknown as { processID: number }).processID],
        );
        if (rows[0].n > 0) return;
        if (Date.now() > deadline) throw new Error('no window blocked on the lock');
        await new Promise((r) => setTimeout(r, 10));
      }
    }

    it('answers a lock timeout with the path\'s own 503', async () => {
      const res = await query(bob, [windowFilter(true, { consistency: 'strong' })]);
      expect(res).toEqual({ status: 503, body: { error: 'thread database timeout; retry window' } });
    });

    it('refuses a window whose authorization changed while it ran', async () => {
      const priv = randomUUID();
      await locker.query('rollback'); // the setup below writes thread rows
      await publish(a, alice.sign({ kind: 9007, tags: [['h', priv], ['name', 'shrinking'], ['visibility', 'private']] }));
      await publish(a, alice.sign({ kind: 9000, tags: [['h', priv], ['p', bob.pubkey]] }));
      const t = await thread(a, alice, priv, 2);
      await locker.query('begin');
      await locker.query('lock table thread_metadata in access exclusive mode');

      const pending = query(bob, [{ kinds: [9], '#e': [t.root.id], depth_limit: 1, thread_window: true, consistency: 'strong' }]);
      await waitForBlockedWindow();
      await writer.query(`update channel_members set removed_at = now() where channel_id = $1 and pubkey = $2`, [priv, bob.pubkey]);
      await locker.query('rollback');
      expect(await pending).toEqual({ status: 503, body: { error: 'thread authorization changed; retry query' } });
      // Asked again, the window is simply not there for bob any more.
      expect((await query(bob, [{ kinds: [9], '#e': [t.root.id], depth_limit: 1, thread_window: true }])).body).toEqual([]);
    });
  });

  describe('budgets', () => {
    it('refuses a response over 8 MiB with its own 503 and records its size', async () => {
      const channel = randomUUID();
      await publish(a, alice.sign({ kind: 9007, tags: [['h', channel], ['name', 'quotes']] }));
      // 200 KiB of quotes is 400 KiB of JSON: 25 of them stay under the scan budget but not the response budget.
      const t = await thread(a, alice, channel, 25, (i) => `${'"'.repeat(200 * 1024)}${i}`);
      const countBefore = await metric('buzz_thread_window_response_bytes_count', {});
      const res = await query(bob, [{ kinds: [9], '#e': [t.root.id], depth_limit: 1, thread_window: true }]);
      expect(res).toEqual({ status: 503, body: { error: 'thread window exceeds response byte budget' } });
      expect(await metric('buzz_thread_window_response_bytes_count', {})).toBe(countBefore + 1);
    });

    it('refuses more than 8 MiB of scanned content with the budget 503', async () => {
      const channel = randomUUID();
      await publish(a, alice.sign({ kind: 9007, tags: [['h', channel], ['name', 'big']] }));
      const t = await thread(a, alice, channel, 33, (i) => `${i}`.padEnd(256 * 1024, 'a'));
      const res = await query(bob, [{ kinds: [9], '#e': [t.root.id], depth_limit: 1, thread_window: true }]);
      expect(res).toEqual({ status: 503, body: { error: 'thread window scan budget exceeded; reduce window work before retrying' } });
    });
  });
});
