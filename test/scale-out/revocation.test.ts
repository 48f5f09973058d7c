/**
 * Revocation across pods: two relay processes on one writer + replica pair and one Redis, with
 * relay membership enforced and the periodic ban sweep set far beyond the test, so only the
 * cross-pod connection control can close a socket on the other pod. A removal from the relay
 * (9031, 28936, the operator CLI) and a ban (9040, the CLI) issued on pod A close the affected
 * sockets on pod B with 1008 "access revoked"; a removal from a private channel on pod A ends
 * the removed member's channel subscription on pod B.
 */
import { execFile } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import path from 'node:path';
import { promisify } from 'node:util';
import { nip19 } from 'nostr-tools';
import { type VerifiedEvent } from 'nostr-tools/pure';
import { Identity, newIdentity, RawClient } from '../harness/nostr-clients.js';
import { startRedisServer, RedisServer } from '../harness/redis-server.js';
import { relayEnv } from '../harness/relay-fixture.js';
import { RelayProcess, startRelay } from '../harness/relay-process.js';
import { createTestDatabase, TestDatabase } from '../harness/test-database.js';
import { metric } from './scale-out-helpers.js';

const ADMIN_CLI = path.resolve(import.meta.dirname, '../../dist/src/admin/admin.cli.js');
const owner = newIdentity();
let db: TestDatabase;
let redis: RedisServer;
let podA: RelayProcess;
let podB: RelayProcess;
const clients: RawClient[] = [];

function podEnv(): Record<string, string> {
  return relayEnv(db, {
    BUZZ_REDIS_URL: redis.url,
    BUZZ_REQUIRE_RELAY_MEMBERSHIP: 'true',
    RELAY_OWNER_PUBKEY: owner.pubkey,
    BUZZ_BAN_RECHECK_MS: '3600000',
    BUZZ_RELAY_PRIVATE_KEY: KEY,
    BUZZ_RATE_LIMIT_HUMAN_WS_EVENTS_PER_SEC: '200',
    BUZZ_RATE_LIMIT_HUMAN_MESSAGES_PER_MIN: '10000',
  });
}
const KEY = randomBytes(32).toString('hex');

beforeAll(async () => {
  db = await createTestDatabase();
  redis = await startRedisServer();
  [podA, podB] = await Promise.all([startRelay(podEnv()), startRelay(podEnv())]);
}, 120_000);

afterAll(async () => {
  for (const c of clients) c.close();
  await Promise.all([podA?.stop(), podB?.stop()]);
  await redis?.stop();
  await db?.drop();
}, 60_000);

async function connect(pod: RelayProcess, id: Identity): Promise<RawClient> {
  const c = await RawClient.authed(pod.wsUrl, id);
  clients.push(c);
  return c;
}

function cmd(id: Identity, kind: number, target: string, tags: string[][] = []): VerifiedEvent {
  return id.sign({ kind, tags: [['p', target], ...tags] });
}

/** A member connected to pod B with one live subscription. */
async function memberOnB(o: RawClient): Promise<{ id: Identity; client: RawClient }> {
  const id = newIdentity();
  expect(await o.publish(cmd(owner, 9030, id.pubkey))).toEqual([true, '']);
  const client = await connect(podB, id);
  expect((await client.req('live', { kinds: [1] })).end).toEqual(['EOSE', 'live']);
  return { id, client };
}

function admin(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const env = { PATH: process.env.PATH ?? '', DATABASE_URL: db.writerUrl, BUZZ_REDIS_URL: redis.url, BUZZ_DEFAULT_COMMUNITY_HOSTS: 'localhost', RELAY_OWNER_PUBKEY: owner.pubkey, BUZZ_RELAY_PRIVATE_KEY: KEY };
  return promisify(execFile)(process.execPath, [ADMIN_CLI, ...args], { env }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (err: { code: number; stdout: string; stderr: string }) => ({ code: err.code, stdout: err.stdout, stderr: err.stderr }),
  );
}

describe('revocation across pods', () => {
  it('a 9031 on pod A closes the removed member’s socket on pod B', async () => {
    const o = await connect(podA, owner);
    const { id, client } = await memberOnB(o);
    const before = await metric(podB, 'buzz_redis_control_messages_total', { direction: 'in', outcome: 'applied' });
    expect(await o.publish(cmd(owner, 9031, id.pubkey))).toEqual([true, '']);
    expect(await client.waitFor((f) => f[0] === 'CLOSED')).toEqual(['CLOSED', 'live', 'restricted: not a relay member']);
    expect(await client.waitClosed()).toEqual({ code: 1008, reason: 'access revoked' });
    expect(await metric(podB, 'buzz_redis_control_messages_total', { direction: 'in', outcome: 'applied' })).toBeGreaterThan(before);
  });

  it('a 28936 leave on pod A closes the leaver’s other socket on pod B', async () => {
    const o = await connect(podA, owner);
    const { id, client } = await memberOnB(o);
    const onA = await connect(podA, id);
    expect(await onA.publish(id.sign({ kind: 28936, tags: [['-']] }))).toEqual([true, 'info: you have left this relay']);
    expect(await client.waitClosed()).toEqual({ code: 1008, reason: 'access revoked' });
    expect(await onA.waitClosed()).toEqual({ code: 1008, reason: 'access revoked' });
  });

  it('a 9040 ban on pod A closes the banned key’s socket on pod B', async () => {
    const o = await connect(podA, owner);
    const { id, client } = await memberOnB(o);
    expect(await o.publish(cmd(owner, 9040, id.pubkey))).toEqual([true, '']);
    expect(await client.waitFor((f) => f[0] === 'CLOSED')).toEqual(['CLOSED', 'live', 'blocked: you are banned from this community']);
    expect(await client.waitClosed()).toEqual({ code: 1008, reason: 'access revoked' });
  });

  it('the operator CLI’s remove-member and ban reach sockets on both pods', async () => {
    const o = await connect(podA, owner);
    const removed = await memberOnB(o);
    const banned = await memberOnB(o);
    const bannedOnA = await connect(podA, banned.id);
    const r1 = await admin('remove-member', nip19.npubEncode(removed.id.pubkey));
    expect(r1).toMatchObject({ code: 0, stdout: `${removed.id.pubkey} removed from localhost\n` });
    expect(await removed.client.waitClosed()).toEqual({ code: 1008, reason: 'access revoked' });
    const r2 = await admin('ban', banned.id.pubkey, '--reason', 'spam');
    expect(r2).toMatchObject({ code: 0, stdout: `${banned.id.pubkey} banned from localhost\n` });
    expect(await banned.client.waitClosed()).toEqual({ code: 1008, reason: 'access revoked' });
    expect(await bannedOnA.waitClosed()).toEqual({ code: 1008, reason: 'access revoked' });
  }, 180_000);

  it('a removal from a private channel on pod A ends the member’s channel subscription on pod B', async () => {
    const o = await connect(podA, owner);
    const { id, client } = await memberOnB(o);
    const channel = randomUUID();
    expect(await o.publish(owner.sign({ kind: 9007, tags: [['h', channel], ['name', 'secret'], ['visibility', 'private']] }))).toEqual([true, '']);
    expect(await o.publish(owner.sign({ kind: 9000, tags: [['h', channel], ['p', id.pubkey]] }))).toEqual([true, '']);
    expect((await client.req('room', { kinds: [9], '#h': [channel] })).end).toEqual(['EOSE', 'room']);
    expect(await o.publish(owner.sign({ kind: 9001, tags: [['h', channel], ['p', id.pubkey]] }))).toEqual([true, '']);
    expect(await client.waitFor((f) => f[0] === 'CLOSED' && f[1] === 'room')).toEqual(['CLOSED', 'room', 'restricted: not a channel member']);
    // Only that subscription: the socket and its other subscription stay.
    expect(client.closed).toBeUndefined();
    expect(client.frames.some((f) => f[0] === 'CLOSED' && f[1] === 'live')).toBe(false);
  });
});
