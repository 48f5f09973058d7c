/**
 * The ban state REQ and COUNT admission read from memory (BanCache), kept true by the `buzz_bans`
 * notifications of migration 0021 (BanNotifyListener), on the real writer + replica pair. Bans are
 * written with plain SQL on the writer, as an operator would: no relay code is involved.
 * - A key read once is answered without a query; a ban, an unban and a changed expiry reach the
 *   answer through the notification, and each is announced to BanNotices (the enforcer's hook).
 * - A ban with an expiry stops refusing when it expires, with no notification.
 * - A listener that is cut off (its session terminated, and every reconnect refused) stops the
 *   cache being trusted: a ban written meanwhile is refused through a writer read, and once the
 *   listener is back, every socket is re-checked (resync) and notifications flow again.
 * - A ping answered while this process's event loop is held past the ping deadline does not
 *   lose the listener (the deadline times the database, not the loop).
 * The listener connects through a TCP proxy so that the test can refuse its reconnects. The clear
 * entries' bound (`BUZZ_BAN_RECHECK_MS`) is set far beyond the test, so every refusal here comes
 * from a notification, an expiry or a writer read.
 */
import { jest } from '@jest/globals';
import type { Pool } from 'pg';
import type { AppConfig } from '../../src/config/app-config.js';
import type { DatabaseService } from '../../packages/read-path/src/database/database.service.js';
import { RelayMetrics } from '../../src/metrics/relay-metrics.service.js';
import { BanCache } from '../../src/moderation/ban-cache.js';
import { BanGate } from '../../src/moderation/ban-gate.service.js';
import { BanNotices } from '../../src/moderation/ban-notices.js';
import { BAN_LISTENER_APPLICATION_NAME, BanNotifyListener, LISTENER_PING_TIMEOUT_MS } from '../../src/moderation/ban-notify-listener.service.js';
import { ModerationRepository } from '../../src/moderation/moderation.repository.js';
import { eventually } from '../harness/eventually.js';
import { newIdentity } from '../harness/nostr-clients.js';
import { startTcpProxy, TcpProxy } from '../harness/tcp-proxy.js';
import { createTestDatabase, TestDatabase } from '../harness/test-database.js';
import { DatabaseLayer, metricValue, startDatabaseLayer } from '../routing/database-layer.js';
import { writerPoolOf } from '../harness/pools.js';

let db: TestDatabase;
let layer: DatabaseLayer;
let writer: Pool;
let proxy: TcpProxy;
let moderation: ModerationRepository;
let cache: BanCache;
let listener: BanNotifyListener;
let gate: BanGate;
let communityId: string;
const announced: string[] = [];
let resyncs = 0;

beforeAll(async () => {
  db = await createTestDatabase();
  layer = await startDatabaseLayer(db);
  writer = writerPoolOf(layer.database);
  ({ rows: [{ id: communityId }] } = await writer.query<{ id: string }>(`insert into communities (host, name) values ('listen.test', 'listen') returning id`));
  const url = new URL(db.writerUrl);
  proxy = await startTcpProxy(url.hostname, Number(url.port));
  moderation = new ModerationRepository(layer.database, layer.routed);
  cache = new BanCache({ banRecheckMs: 3_600_000 });
  gate = new BanGate(moderation, cache);
  const notices = new BanNotices();
  notices.subscribe(async (community, pubkey) => void announced.push(`${community}:${pubkey}`));
  notices.onResync(async () => void (resyncs += 1));
  const config = { database: { url: proxy.url(db.writerUrl) } } as AppConfig;
  listener = new BanNotifyListener(config, cache, notices, new RelayMetrics(), { afterStart: () => undefined } as unknown as DatabaseService);
  listener.start();
  await eventually('the ban listener is listening', async () => listener.isListening);
});

afterAll(async () => {
  await listener?.onApplicationShutdown();
  await proxy?.close();
  await layer?.close();
  await db?.drop();
});

async function ban(pubkey: string, expiresIn?: string): Promise<void> {
  await writer.query(`insert into bans (community_id, pubkey, expires_at) values ($1, $2, now() + $3::interval)`, [communityId, pubkey, expiresIn ?? null]);
}

/** The listener's backends on this test's database. */
async function listenerPids(): Promise<number[]> {
  const { rows } = await writer.query<{ pid: number }>(`select pid from pg_stat_activity where application_name = $1 and datname = current_database()`, [BAN_LISTENER_APPLICATION_NAME]);
  return rows.map((r) => r.pid);
}

/** Counts the writer reads behind the cache while `fn` runs. */
async function readsDuring(fn: () => Promise<unknown>): Promise<number> {
  const spy = jest.spyOn(moderation, 'banExpiries');
  try {
    await fn();
    return spy.mock.calls.length;
  } finally {
    spy.mockRestore();
  }
}

describe('the ban cache behind REQ and COUNT admission', () => {
  it('answers a key it has read without a query; a ban written by SQL reaches it and is announced', async () => {
    const key = newIdentity().pubkey;
    expect(await readsDuring(() => gate.isBannedForRead(communityId, key))).toBe(1);
    expect(await gate.isBannedForRead(communityId, key)).toBe(false);
    expect(await readsDuring(() => gate.isBannedForRead(communityId, key))).toBe(0);
    expect(await metricValue('buzz_ban_listener_connected')).toBe(1);

    await ban(key);
    await eventually('the ban is announced', async () => announced.includes(`${communityId}:${key}`));
    expect(await gate.isBannedForRead(communityId, key)).toBe(true);
    expect(await readsDuring(() => gate.isBannedForRead(communityId, key))).toBe(0);

    // The owner a session proved: its ban refuses the agent too.
    const agent = newIdentity().pubkey;
    const owner = newIdentity().pubkey;
    expect(await gate.isBannedForRead(communityId, agent, owner)).toBe(false);
    await ban(owner);
    await eventually('the owner’s ban refuses the agent', () => gate.isBannedForRead(communityId, agent, owner));
  });

  it('forgets a ban that is deleted or whose expiry is moved into the past', async () => {
    const [deleted, shortened] = [newIdentity().pubkey, newIdentity().pubkey];
    await ban(deleted);
    await ban(shortened);
    expect(await gate.isBannedForRead(communityId, deleted)).toBe(true);
    expect(await gate.isBannedForRead(communityId, shortened)).toBe(true);

    await writer.query(`delete from bans where community_id = $1 and pubkey = $2`, [communityId, deleted]);
    await writer.query(`update bans set expires_at = now() - interval '1 minute' where community_id = $1 and pubkey = $2`, [communityId, shortened]);
    await eventually('the deleted ban no longer refuses', async () => !(await gate.isBannedForRead(communityId, deleted)));
    await eventually('the expired ban no longer refuses', async () => !(await gate.isBannedForRead(communityId, shortened)));
  });

  it('stops refusing a time-limited ban when it expires, with no notification', async () => {
    const key = newIdentity().pubkey;
    await ban(key, '2 seconds');
    await eventually('the ban is announced', async () => announced.includes(`${communityId}:${key}`));
    const before = announced.length;
    expect(await gate.isBannedForRead(communityId, key)).toBe(true);
    expect(await readsDuring(() => gate.isBannedForRead(communityId, key))).toBe(0);
    await eventually('the ban expired', async () => !(await gate.isBannedForRead(communityId, key)));
    expect(announced.slice(before)).not.toContain(`${communityId}:${key}`);
  });
});

describe('a lost listener', () => {
  it('reads bans from the writer while it is down, re-checks every socket once back, and hears notifications again', async () => {
    const key = newIdentity().pubkey;
    expect(await gate.isBannedForRead(communityId, key)).toBe(false); // kept as clear
    const [pid] = await listenerPids();
    expect(pid).toBeDefined();
    const resyncsBefore = resyncs;

    // Every reconnect is refused until the proxy passes again.
    proxy.mode = { kind: 'reset' };
    await writer.query(`select pg_terminate_backend($1)`, [pid]);
    await eventually('the listener noticed', async () => !listener.isListening);
    expect(await metricValue('buzz_ban_listener_connected')).toBe(0);

    // Written while nothing listens: no notification reaches this pod, the writer read refuses.
    await ban(key);
    expect(await readsDuring(async () => expect(await gate.isBannedForRead(communityId, key)).toBe(true))).toBe(1);
    const clear = newIdentity().pubkey;
    expect(await gate.isBannedForRead(communityId, clear)).toBe(false);
    expect(await readsDuring(() => gate.isBannedForRead(communityId, clear))).toBe(1); // nothing kept

    proxy.mode = { kind: 'pass', delayMs: 0 };
    await eventually('the listener is back', async () => listener.isListening);
    expect(resyncs).toBeGreaterThan(resyncsBefore);
    expect(await listenerPids()).not.toContain(pid);
    expect(await metricValue('buzz_ban_listener_connected')).toBe(1);
    // What was kept before the outage is not trusted after it.
    expect(await readsDuring(async () => expect(await gate.isBannedForRead(communityId, key)).toBe(true))).toBe(1);

    const later = newIdentity().pubkey;
    expect(await gate.isBannedForRead(communityId, later)).toBe(false);
    await ban(later);
    await eventually('a ban after the reconnect is announced', async () => announced.includes(`${communityId}:${later}`));
    expect(await gate.isBannedForRead(communityId, later)).toBe(true);
  });

  it('is re-established after pg_terminate_backend, and a ban written around it is still refused', async () => {
    const key = newIdentity().pubkey;
    expect(await gate.isBannedForRead(communityId, key)).toBe(false);
    const [pid] = await listenerPids();
    await writer.query(`select pg_terminate_backend($1)`, [pid]);
    await ban(key);
    await eventually('the ban is refused', () => gate.isBannedForRead(communityId, key));
    await eventually('the listener is back on a new session', async () => listener.isListening && (await listenerPids()).some((p) => p !== pid));
  });
});

describe('a slow event loop', () => {
  it('keeps the listener when a ping is answered while the loop is held past the ping deadline', async () => {
    // Straight to Postgres (no in-process proxy): its answer lands in the socket while the loop is held.
    const config = { database: { url: db.writerUrl } } as AppConfig;
    const direct = new BanNotifyListener(config, new BanCache({ banRecheckMs: 3_600_000 }), new BanNotices(), new RelayMetrics(), { afterStart: () => undefined } as unknown as DatabaseService);
    direct.start();
    try {
      await eventually('the second listener is listening', async () => direct.isListening);
      const internals = direct as unknown as { current: unknown; ping(client: unknown): Promise<void> };
      const client = internals.current;
      const ping = internals.ping(client);
      // A synchronous task in the check phase holds the loop past the deadline: when the loop turns
      // again its timers run before its sockets are read, as after a stall under load.
      await new Promise<void>((resolve) =>
        setImmediate(() => {
          const until = Date.now() + LISTENER_PING_TIMEOUT_MS + 500;
          while (Date.now() < until) {
            // held
          }
          resolve();
        }),
      );
      await ping;
      expect(direct.isListening).toBe(true);
      expect(internals.current).toBe(client);
    } finally {
      await direct.onApplicationShutdown();
    }
  });
});
