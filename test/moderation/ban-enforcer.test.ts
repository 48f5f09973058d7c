/**
 * BanEnforcer on the real writer + replica pair (the ban state is read from the writer): the
 * periodic pass reads every connected key in statements of at most SWEEP_CHUNK pairs and revokes
 * exactly the sockets of banned keys (and of agents whose proved owner is banned); an expired ban
 * revokes nothing; the immediate hook (BanNotices.announce) revokes without waiting for a pass.
 * Connections are RelayConnections over a stand-in socket, as in relay-connection.spec.ts; the
 * periodic timer is set far beyond the test, so every pass here is one the test runs.
 */
import { jest } from '@jest/globals';
import { WebSocket } from 'ws';
import type { AppConfig } from '../../src/config/app-config.js';
import { NostrFilter } from '../../src/nostr/nostr.types.js';
import { communityWide } from '../../src/channels/read-scope.js';
import { BanCache } from '../../src/moderation/ban-cache.js';
import { BanGate } from '../../src/moderation/ban-gate.service.js';
import { BanNotices } from '../../src/moderation/ban-notices.js';
import { ModerationRepository } from '../../src/moderation/moderation.repository.js';
import { BanEnforcer, SWEEP_CHUNK } from '../../src/subscriptions/ban-enforcer.service.js';
import type { LiveFanout } from '../../src/subscriptions/live-fanout.service.js';
import { RelayConnection } from '../../src/subscriptions/relay-connection.js';
import { newIdentity } from '../harness/nostr-clients.js';
import { createTestDatabase, TestDatabase } from '../harness/test-database.js';
import { DatabaseLayer, startDatabaseLayer } from '../routing/database-layer.js';
import { writerPoolOf } from '../harness/pools.js';

interface Client {
  readonly conn: RelayConnection;
  readonly sent: unknown[][];
  closed?: { code?: number; reason?: string };
}

let db: TestDatabase;
let layer: DatabaseLayer;
let moderation: ModerationRepository;
let notices: BanNotices;
let enforcer: BanEnforcer;
let communityId: string;
const open = new Set<RelayConnection>();

beforeAll(async () => {
  db = await createTestDatabase();
  layer = await startDatabaseLayer(db);
  ({ rows: [{ id: communityId }] } = await writerPoolOf(layer.database).query<{ id: string }>(`insert into communities (host, name) values ('bans.test', 'bans') returning id`));
  moderation = new ModerationRepository(layer.database, layer.routed);
  notices = new BanNotices();
  const fanout = { connections: () => open.values() } as unknown as LiveFanout;
  enforcer = new BanEnforcer({ banRecheckMs: 3_600_000 } as AppConfig, fanout, moderation, new BanGate(moderation, new BanCache({ banRecheckMs: 5000 })), notices);
  enforcer.onModuleInit();
});

afterAll(async () => {
  enforcer?.onModuleDestroy();
  await layer?.close();
  await db?.drop();
});

afterEach(() => open.clear());

/** An authenticated connection holding one live subscription, registered as open on the pod. */
function client(pubkey: string, nipOaOwner?: string): Client {
  const c: Client = { conn: undefined as unknown as RelayConnection, sent: [] };
  const ws = {
    readyState: WebSocket.OPEN as number,
    bufferedAmount: 0,
    send: (text: string, cb: () => void) => {
      c.sent.push(JSON.parse(text) as unknown[]);
      cb();
    },
    close(code?: number, reason?: string) {
      c.closed = { code, reason };
      this.readyState = WebSocket.CLOSED;
    },
    terminate() {
      this.readyState = WebSocket.CLOSED;
    },
  };
  const log = { info: () => undefined, debug: () => undefined } as never;
  const conn = new RelayConnection(ws as unknown as WebSocket, communityId, 'bans.test', log, { sendBuffer: 100, slowClientGraceLimit: 15, maxQueuedBytes: 1 << 20 }, { slowClientDisconnected: () => undefined, subscriptionShed: () => undefined });
  conn.authState = 'authenticated';
  conn.pubkey = pubkey;
  conn.nipOaOwner = nipOaOwner;
  const filters: NostrFilter[] = [{ tags: {}, extensions: {} }];
  conn.claim('live', filters, communityWide(communityId));
  Object.assign(c, { conn });
  open.add(conn);
  return c;
}

async function ban(pubkey: string, expired = false): Promise<void> {
  await writerPoolOf(layer.database).query(`insert into bans (community_id, pubkey, expires_at) values ($1, $2, $3)`, [communityId, pubkey, expired ? new Date(Date.now() - 60_000) : null]);
}

function expectRevoked(c: Client): void {
  expect(c.sent).toEqual([['CLOSED', 'live', 'blocked: you are banned from this community']]);
  expect(c.closed).toEqual({ code: 1008, reason: 'access revoked' });
  expect(c.conn.subscriptions.size).toBe(0);
}

function expectUntouched(c: Client): void {
  expect(c.sent).toEqual([]);
  expect(c.closed).toBeUndefined();
  expect(c.conn.subscriptions.has('live')).toBe(true);
}

describe('the periodic pass', () => {
  it('reads every connected key in bounded statements and revokes exactly the banned ones', async () => {
    const clear = Array.from({ length: 2 * SWEEP_CHUNK }, () => client(newIdentity().pubkey));
    const lastChunk = client(newIdentity().pubkey); // key 2 * SWEEP_CHUNK + 1: the third statement
    const owner = newIdentity().pubkey;
    const agent = client(newIdentity().pubkey, owner);
    const expired = client(newIdentity().pubkey);
    await ban(lastChunk.conn.pubkey!);
    await ban(owner);
    await ban(expired.conn.pubkey!, true);

    const reads = jest.spyOn(moderation, 'bannedAmong');
    await enforcer.sweep();
    const sizes = reads.mock.calls.map(([pairs]) => pairs.length);
    reads.mockRestore();

    // 2,003 sockets, 2,004 keys (the agent's owner is one too): three statements, none over the chunk.
    expect(sizes.length).toBe(Math.ceil((2 * SWEEP_CHUNK + 4) / SWEEP_CHUNK));
    expect(Math.max(...sizes)).toBeLessThanOrEqual(SWEEP_CHUNK);
    expectRevoked(lastChunk);
    expectRevoked(agent);
    expectUntouched(expired);
    for (const c of clear) expectUntouched(c);
  });
});

describe('the immediate hook', () => {
  it('revokes the announced key’s sockets, and its agents’, without a pass', async () => {
    const target = newIdentity().pubkey;
    const [first, second] = [client(target), client(target)];
    const agent = client(newIdentity().pubkey, target);
    const other = client(newIdentity().pubkey);
    await ban(target);

    await notices.announce(communityId, target);
    expectRevoked(first);
    expectRevoked(second);
    expectRevoked(agent);
    expectUntouched(other);
  });

  it('revokes nothing when the announced key is not banned (the hook re-reads the writer)', async () => {
    const c = client(newIdentity().pubkey);
    await notices.announce(communityId, c.conn.pubkey!);
    expectUntouched(c);
  });

  it('does not answer from a lookup that read the ban state before the ban was committed', async () => {
    const c = client(newIdentity().pubkey);
    // A lookup of the key (an AUTH or REQ admission, say) read "not banned" and is still in
    // flight: its answer is held until the hook has run.
    const real = layer.routed.internalReadOnWriter.bind(layer.routed);
    let letThrough!: () => void;
    const held = new Promise<void>((r) => (letThrough = r));
    let read = false;
    const spy = jest.spyOn(layer.routed, 'internalReadOnWriter').mockImplementationOnce(async (operation, work) => {
      const answer = await real(operation, work);
      read = true;
      await held;
      return answer;
    });
    try {
      const inFlight = moderation.restrictionOf(communityId, c.conn.pubkey!);
      while (!read) await new Promise((r) => setTimeout(r, 10));
      await ban(c.conn.pubkey!);
      await notices.announce(communityId, c.conn.pubkey!);
      expectRevoked(c);
      letThrough();
      expect(await inFlight).toEqual({ kind: 'none' });
    } finally {
      letThrough();
      spy.mockRestore();
    }
  }, 15_000); // a hook that joined the held lookup would wait for it: fail, do not hang
});
