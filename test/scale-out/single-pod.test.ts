/**
 * One pod without BUZZ_REDIS_URL: presence lives in the process with the same
 * contract (set, synthesise on the bridge, `offline` and last-socket clear, TTL
 * expiry), and /readyz says Redis is not in use. Live fan-out and quotas in
 * process are covered by the e2e suites, which run without Redis.
 */
import { getPublicKey } from 'nostr-tools/pure';
import { randomBytes } from 'node:crypto';
import { newIdentity, RawClient } from '../harness/nostr-clients.js';
import { RelayFixture, startRelayFixture } from '../harness/relay-fixture.js';
import { RelayProcess } from '../harness/relay-process.js';
import { eventually, readiness, synthesisedPresence } from './scale-out-helpers.js';

const RELAY_KEY = randomBytes(32).toString('hex');
const TTL_SECS = 4;
let fixture: RelayFixture;
let relay: RelayProcess;
const reader = newIdentity();

beforeAll(async () => {
  fixture = await startRelayFixture({
    BUZZ_REQUIRE_AUTH_TOKEN: 'true',
    BUZZ_RELAY_PRIVATE_KEY: RELAY_KEY,
    BUZZ_EPHEMERAL_TTL_OVERRIDE: String(TTL_SECS),
    BUZZ_RATE_LIMIT_HUMAN_API_CALLS_PER_MIN: '1000',
  });
  relay = fixture.relay;
}, 60_000);

afterAll(() => fixture?.close());

describe('one pod without Redis', () => {
  it('reports Redis as disabled and stays ready', async () => {
    expect(await readiness(relay)).toMatchObject({ status: 200, body: { status: 'ready', redis: 'disabled' } });
  });

  it('keeps presence in process: set, synthesise, offline clears', async () => {
    const alice = newIdentity();
    const a = await RawClient.authed(relay.wsUrl, alice);
    expect(await a.publish(alice.sign({ kind: 20001, content: 'away' }))).toEqual([true, '']);
    const [synthesised, ...rest] = await synthesisedPresence(relay, reader, [alice.pubkey]);
    expect(rest).toEqual([]);
    expect(synthesised).toMatchObject({ kind: 20001, pubkey: getPublicKey(Buffer.from(RELAY_KEY, 'hex')), content: 'away', tags: [['p', alice.pubkey]] });
    expect(await a.publish(alice.sign({ kind: 20001, content: '{"status":"offline"}' }))).toEqual([true, '']);
    expect(await synthesisedPresence(relay, reader, [alice.pubkey])).toEqual([]);
    a.close();
  });

  it('forgets presence after its TTL and when the last socket closes', async () => {
    const bob = newIdentity();
    const carol = newIdentity();
    const b = await RawClient.authed(relay.wsUrl, bob);
    const c = await RawClient.authed(relay.wsUrl, carol);
    expect(await b.publish(bob.sign({ kind: 20001, content: 'here' }))).toEqual([true, '']);
    expect(await c.publish(carol.sign({ kind: 20001, content: 'here too' }))).toEqual([true, '']);
    expect((await synthesisedPresence(relay, reader, [bob.pubkey, carol.pubkey])).map((e) => e.content)).toEqual(['here', 'here too']);
    c.close();
    await c.waitClosed();
    // Well inside the TTL: the close cleared it, not the expiry.
    await eventually('carol cleared on close', async () => (await synthesisedPresence(relay, reader, [carol.pubkey])).length === 0, 1000);
    expect((await synthesisedPresence(relay, reader, [bob.pubkey])).length).toBe(1);
    await eventually('bob expired', async () => (await synthesisedPresence(relay, reader, [bob.pubkey])).length === 0, (TTL_SECS + 3) * 1000);
    b.close();
  });
});
