/**
 * deploy/compose/haproxy.cfg in front of two real relay processes (where `haproxy` is installed).
 * The config is the committed one with only its addresses moved onto loopback ports: the compose
 * host names become 127.0.0.1:<port of each relay>, the two `bind`s free ports, and Docker's DNS
 * resolver is dropped. Everything under test stays as committed: WebSocket pass-through, the
 * /readyz checks, leastconn, and the retry/redispatch that hides a pod's closed listener while it
 * drains.
 */
import { ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createTestDatabase, TestDatabase } from '../harness/test-database.js';
import { newIdentity, RawClient } from '../harness/nostr-clients.js';
import { RelayProcess, startRelay } from '../harness/relay-process.js';
import { freePort } from '../harness/redis-server.js';
import { onPath, readText } from '../deploy/deploy-sources.js';

const POLL_MS = 100;


/** The committed haproxy.cfg with its addresses moved to loopback. */
function loopbackConfig(lbPort: number, monitorPort: number, relays: Record<string, number>): string {
  let cfg = readText('deploy/compose/haproxy.cfg')
    .replace(/^resolvers docker\n(?:[ \t]+.*\n)+/m, '')
    .replace(/ resolvers docker/g, '')
    .replace(/^(\s+bind) :3000$/m, `$1 127.0.0.1:${lbPort}`)
    .replace(/^(\s+bind) :8404$/m, `$1 127.0.0.1:${monitorPort}`);
  for (const [name, port] of Object.entries(relays)) cfg = cfg.replace(new RegExp(`^(\\s+server ${name}) ${name}:\\d+$`, 'm'), `$1 127.0.0.1:${port}`);
  return cfg;
}

/** Server name → HAProxy status (`UP`, `DOWN`, …) of the `relays` backend, from the stats CSV. */
async function serverStatus(monitorUrl: string): Promise<Record<string, string>> {
  const [header, ...rows] = (await (await fetch(`${monitorUrl}/stats;csv`)).text()).trim().split('\n');
  const columns = header.replace(/^# /, '').split(',');
  const status: Record<string, string> = {};
  for (const row of rows.map((r) => r.split(','))) {
    if (row[0] === 'relays' && row[1] !== 'BACKEND') status[row[1]] = row[columns.indexOf('status')];
  }
  return status;
}

async function until<T>(what: string, probe: () => Promise<T>, ok: (value: T) => boolean, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: T | undefined;
  while (Date.now() < deadline) {
    last = await probe().catch(() => undefined);
    if (last !== undefined && ok(last)) return last;
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
  throw new Error(`${what}: not reached within ${timeoutMs} ms (last: ${JSON.stringify(last)})`);
}

async function activeConnections(relay: RelayProcess): Promise<number> {
  const text = await (await fetch(relay.metricsUrl)).text();
  return Number(/^buzz_ws_connections_active (\d+)$/m.exec(text)?.[1] ?? NaN);
}

(onPath('haproxy') ? describe : describe.skip)('deploy/compose/haproxy.cfg in front of two relays', () => {
  let db: TestDatabase;
  let relayA: RelayProcess;
  let relayB: RelayProcess;
  let haproxy: ChildProcess;
  let haproxyOutput = '';
  let dir: string;
  let lbUrl: string;
  let monitorUrl: string;
  const clients: RawClient[] = [];
  const alice = newIdentity();

  beforeAll(async () => {
    db = await createTestDatabase();
    const [lbPort, monitorPort] = [await freePort(), await freePort()];
    lbUrl = `ws://localhost:${lbPort}`;
    monitorUrl = `http://127.0.0.1:${monitorPort}`;
    const env = { DATABASE_URL: db.writerUrl, READ_DATABASE_URL: db.readerUrl, BUZZ_DEFAULT_COMMUNITY_HOSTS: 'localhost', RELAY_URL: lbUrl };
    [relayA, relayB] = await Promise.all([startRelay(env), startRelay(env)]);
    dir = mkdtempSync(path.join(tmpdir(), 'buzz-haproxy-'));
    const cfg = path.join(dir, 'haproxy.cfg');
    writeFileSync(cfg, loopbackConfig(lbPort, monitorPort, { 'relay-a': relayA.port, 'relay-b': relayB.port }));
    haproxy = spawn('haproxy', ['-db', '-f', cfg], { stdio: ['ignore', 'pipe', 'pipe'] });
    haproxy.stdout!.on('data', (d: Buffer) => (haproxyOutput += d.toString()));
    haproxy.stderr!.on('data', (d: Buffer) => (haproxyOutput += d.toString()));
    await until('both relays UP at the load balancer', () => serverStatus(monitorUrl), (s) => s['relay-a'] === 'UP' && s['relay-b'] === 'UP');
  });

  afterAll(async () => {
    for (const c of clients) c.close();
    haproxy?.kill('SIGTERM');
    await Promise.all([relayA?.stop(), relayB?.stop()]);
    await db?.drop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('serves the relay through the one port, both pods taking connections', async () => {
    for (let i = 0; i < 4; i++) clients.push(await RawClient.authed(lbUrl, alice));
    const note = alice.sign({ kind: 1, content: 'through the load balancer' });
    expect(await clients[0].publish(note)).toEqual([true, '']);
    const { events } = await clients[3].req('s', { ids: [note.id] });
    expect(events.map((e) => e.id)).toEqual([note.id]);
    // leastconn: four sockets opened one after another end up two and two.
    expect([await activeConnections(relayA), await activeConnections(relayB)]).toEqual([2, 2]);
  });

  it('keeps accepting connections while a pod drains, and takes it out of rotation', async () => {
    const stopped = relayA.stop('SIGTERM');
    const failures: string[] = [];
    let opened = 0;
    // Keep dialling through the load balancer while relay-a closes its listener and its checks fail.
    const deadline = Date.now() + 6000;
    while (Date.now() < deadline) {
      try {
        const c = await RawClient.connect(lbUrl);
        opened += 1;
        c.close();
      } catch (err) {
        failures.push((err as Error).message);
      }
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
    expect({ opened: opened > 20, failures }).toEqual({ opened: true, failures: [] });
    expect(await stopped).toBe(0);
    expect((await serverStatus(monitorUrl))['relay-a']).toMatch(/^DOWN/);
    // The two sockets relay-a held were told it restarts; relay-b's two are untouched.
    const closes = clients.map((c) => c.closed?.code).sort();
    expect(closes).toEqual([1012, 1012, undefined, undefined]);
    expect(await activeConnections(relayB)).toBe(2);
  });

  it('reports unhealthy once no pod is ready', async () => {
    await relayB.stop('SIGTERM');
    const status = await until('monitor /healthz answers 503', async () => (await fetch(`${monitorUrl}/healthz`)).status, (s) => s === 503);
    expect(status).toBe(503);
    expect(haproxyOutput).toContain('backend relays has no server available');
  });
});
