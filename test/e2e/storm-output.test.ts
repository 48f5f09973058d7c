/**
 * A small reconnect storm on the built relay and the writer + replica pair (issue 17, item 6):
 * history pages and live fan-out go out in turns (OutputTurns) with frames shared between
 * subscribers, and none of that changes what a client receives.
 *
 * 150 clients authenticate at once and ask for the same recent page while one key publishes.
 * Asserted (outcomes, never times): every publisher EVENT sent during the storm is acknowledged
 * `OK true`; no history read is routed to the writer (the replica serves them); every client gets its whole page in order, then exactly one EOSE of its own; clients
 * with the same subscription id receive byte-identical history frames, clients with another id
 * the same events under theirs; a page longer than one turn, a REQ whose last filter has no
 * history and one with a single filter end with EOSE too; after the storm every subscription
 * that follows the publisher receives its live event.
 */
import { randomBytes } from 'node:crypto';
import { finalizeEvent, type VerifiedEvent } from 'nostr-tools/pure';
import { authTemplate, type Identity, newIdentity, RawClient } from '../harness/nostr-clients.js';
import { RelayFixture, startRelayFixture } from '../harness/relay-fixture.js';

const STORED = 160;
const SAME_ID = 120;
const OWN_ID = 30;
const seedAuthor = randomBytes(32);
const PAGE = { kinds: [1], authors: [seedAuthor.toString('hex')], limit: 50 };

let fx: RelayFixture;
/** Stored ids, newest first (the order a page is served in). */
let newestFirst: string[];

beforeAll(async () => {
  fx = await startRelayFixture({
    // History may be served by the replica (issue 17: a storm's history reads never land on the writer).
    BUZZ_REPLICA_READ_MAX_AGE_MS: '5000',
    BUZZ_RATE_LIMIT_HUMAN_WS_EVENTS_PER_SEC: '100000',
    BUZZ_RATE_LIMIT_HUMAN_MESSAGES_PER_MIN: '100000',
  });
  const { rows } = await fx.writer.query<{ id: string }>(
    `insert into events (community_id, id, pubkey, created_at, kind, tags, content, sig)
     select c.id, decode(md5('storm' || g) || md5('row' || g), 'hex'), $1, now() - interval '1 hour' - (g || ' seconds')::interval, 1,
            '[["t","storm"]]', 'stored "' || g || '" ✓', $2
       from communities c, generate_series(1, $3) g
      where c.host = 'localhost'
     returning encode(id, 'hex') as id`,
    [seedAuthor, randomBytes(64), STORED],
  );
  // generate_series 1 is the newest row.
  newestFirst = rows.map((r) => r.id);
  await fx.db.waitForReplica();
}, 60_000);

afterAll(async () => {
  await fx?.close();
});

interface StormClient {
  readonly client: RawClient;
  readonly subId: string;
  /** Every text frame received after the REQ, as sent. */
  readonly raw: string[];
}

/** Generous waits: the machine is shared, and this test is about what arrives, not when. */
const WAIT_MS = 60_000;

async function authed(id: Identity): Promise<RawClient> {
  const client = await RawClient.connect(fx.relay.wsUrl);
  const auth = finalizeEvent(authTemplate(client.challenge, fx.relay.wsUrl), id.sk);
  client.send(['AUTH', auth]);
  const ok = await client.waitFor((f) => f[0] === 'OK' && f[1] === auth.id, WAIT_MS);
  if (ok[2] !== true) throw new Error(`auth refused: ${String(ok[3])}`);
  return client;
}

async function publish(client: RawClient, ev: VerifiedEvent): Promise<[boolean, string]> {
  const from = client.frames.length;
  client.send(['EVENT', ev]);
  const ok = await client.waitFor((f) => f[0] === 'OK' && f[1] === ev.id, WAIT_MS, from);
  return [ok[2] as boolean, ok[3] as string];
}

async function join(subId: string, filters: object[]): Promise<StormClient> {
  const client = await authed(newIdentity());
  const raw: string[] = [];
  client.ws.on('message', (data) => raw.push(data.toString()));
  client.send(['REQ', subId, ...filters]);
  return { client, subId, raw };
}

const ended = (c: StormClient) => c.client.waitFor((f) => (f[0] === 'EOSE' || f[0] === 'CLOSED') && f[1] === c.subId, WAIT_MS);

/** The client's frames up to and including its first EOSE (or all of them). */
function untilEose(c: StormClient): Array<[string, ...unknown[]]> {
  const frames = c.raw.map((t) => JSON.parse(t) as [string, ...unknown[]]);
  const at = frames.findIndex((f) => f[0] === 'EOSE');
  return at < 0 ? frames : frames.slice(0, at + 1);
}

const storedIds = () => new Set(newestFirst);

/** History route decisions so far, by `decision/reason`, from the relay's /metrics. */
async function historyRoutes(): Promise<Record<string, number>> {
  const text = await (await fetch(fx.relay.metricsUrl)).text();
  const out: Record<string, number> = {};
  for (const line of text.split('\n')) {
    if (!line.startsWith('buzz_db_route_decision{') || !line.includes('path="req_historical"')) continue;
    const key = `${/decision="([^"]*)"/.exec(line)?.[1]}/${/reason="([^"]*)"/.exec(line)?.[1]}`;
    out[key] = (out[key] ?? 0) + Number(line.split(' ').pop());
  }
  return out;
}

it('a storm of identical history reads: every client served in full with its own EOSE, every publisher EVENT acknowledged', async () => {
  const publisherKey = newIdentity();
  const publisher = await authed(publisherKey);
  // Every storm REQ also follows the publisher live; that filter has no history (limit 0), so
  // each REQ's last batch is empty and its EOSE goes out in a turn of its own.
  const live = { kinds: [1], authors: [publisherKey.pubkey], limit: 0 };
  const routesBefore = await historyRoutes();
  const acks: Array<Promise<[boolean, string]>> = [];
  let publishing = true;
  const publishLoop = (async () => {
    for (let n = 0; publishing; n++) {
      acks.push(publish(publisher, publisherKey.sign({ kind: 1, content: `during the storm ${n}` })));
      await new Promise((r) => setTimeout(r, 20));
    }
  })();

  const clients = await Promise.all([
    ...Array.from({ length: SAME_ID }, () => join('h', [PAGE, live])),
    ...Array.from({ length: OWN_ID }, (_, i) => join(`own-${i}`, [PAGE, live])),
    // Longer than one turn of a page (FRAMES_PER_TURN = 100).
    join('long', [{ ...PAGE, limit: 150 }, live]),
    // One filter: EOSE goes out in the same turn as the page's last row.
    join('one', [PAGE]),
  ]);
  await Promise.all(clients.map(ended));
  publishing = false;
  await publishLoop;
  const results = await Promise.all(acks);

  expect(results.length).toBeGreaterThan(0);
  expect(results.filter(([ok]) => !ok)).toEqual([]);
  // The storm's history came from the replica: no history read was routed to the writer.
  const routesAfter = await historyRoutes();
  const onWriter = Object.fromEntries(Object.entries(routesAfter).filter(([k, v]) => k.startsWith('writer/') && v !== (routesBefore[k] ?? 0)));
  expect(onWriter).toEqual({});
  expect(Object.entries(routesAfter).some(([k, v]) => k.startsWith('replica/') && v > (routesBefore[k] ?? 0))).toBe(true);

  const stored = storedIds();
  const historyOf = (c: StormClient) => untilEose(c).filter((f) => f[0] === 'EVENT' && stored.has((f[2] as { id: string }).id));
  for (const c of clients) {
    const frames = untilEose(c);
    expect(frames.at(-1)).toEqual(['EOSE', c.subId]);
    // Live events of the publisher may come before EOSE (the subscription is live from its claim); stored rows come in page order.
    expect(frames.filter((f) => f[0] === 'EVENT').every((f) => f[1] === c.subId)).toBe(true);
    const want = c.subId === 'long' ? newestFirst.slice(0, 150) : newestFirst.slice(0, 50);
    expect(historyOf(c).map((f) => (f[2] as { id: string }).id)).toEqual(want);
  }

  // Same subscription id: the very same bytes on the wire.
  const rawHistory = (c: StormClient) => c.raw.filter((t) => t.startsWith('["EVENT"') && stored.has((JSON.parse(t)[2] as { id: string }).id));
  const sameId = clients.filter((c) => c.subId === 'h');
  const reference = rawHistory(sameId[0]);
  for (const c of sameId) expect(rawHistory(c)).toEqual(reference);
  // Another id: the same events under its own id.
  const referenceEvents = historyOf(sameId[0]).map((f) => f[2]);
  for (const c of clients.filter((c) => c.subId.startsWith('own-'))) expect(historyOf(c).map((f) => f[2])).toEqual(referenceEvents);

  // Live fan-out after the storm reaches every subscription, under its own id.
  const last = publisherKey.sign({ kind: 1, content: 'after the storm' });
  expect(await publish(publisher, last)).toEqual([true, '']);
  const following = clients.filter((c) => c.subId !== 'one');
  await Promise.all(following.map((c) => c.client.waitFor((f) => f[0] === 'EVENT' && f[1] === c.subId && (f[2] as { id: string }).id === last.id, WAIT_MS)));
  // By now everything each subscription was sent has arrived: one EOSE each, no CLOSED.
  for (const c of clients) expect(c.raw.filter((t) => t.startsWith('["EOSE"') || t.startsWith('["CLOSED"'))).toEqual([JSON.stringify(['EOSE', c.subId])]);
  for (const c of [...clients.map((x) => x.client), publisher]) c.close();
}, 180_000);
