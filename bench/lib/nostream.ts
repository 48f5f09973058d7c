/**
 * nostream (github.com/Cameri/nostream), the relay issue 17 compares the storm against, started
 * the way its docker-compose file starts it but from a local checkout: `NOSTREAM_DIR` names a
 * clone that has had `npm ci && npm run build` run in it (nothing of it is part of this
 * repository). The bench gives it a fresh Postgres pair's writer (nostream reads and writes
 * there: no replica, as the issue measured it), a private redis-server, its migrations
 * (`knex migrate:latest`, its own), and a settings file that lifts its per-IP and per-kind rate
 * limits for loopback, as bench-env lifts the relay's quotas.
 *
 * nostream forks one worker per core plus a maintenance worker; `processTree` CPU and RSS cover
 * them all. It speaks no NIP-42 and serves no /metrics.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PgCluster } from '../../src/database/embedded/pg-cluster.js';
import { freePort, startRedisServer } from '../../test/harness/redis-server.js';
import { envOf, logLine, spawnChild, type BenchEnv, type RelayChild } from './bench-env.js';

const DATABASE = 'nostream_bench';
const START_TIMEOUT_MS = 60_000;
const LOOPBACK = ['127.0.0.1', '::ffff:127.0.0.1', '::1'];

/** The checkout named by NOSTREAM_DIR, or why it cannot be used. */
export function nostreamDir(): { dir: string } | { missing: string } {
  const dir = process.env.NOSTREAM_DIR;
  if (!dir) return { missing: 'NOSTREAM_DIR is not set (a nostream checkout with `npm ci && npm run build` done in it)' };
  const entry = path.join(dir, 'dist/src/index.js');
  if (!existsSync(entry)) return { missing: `${entry} is missing: run \`npm ci && npm run build\` in ${dir}` };
  return { dir };
}

/**
 * nostream's defaults (resources/default-settings.yaml) rate-limit connections to 12/s per IP,
 * messages to 240/min and kind-1 events to 12/min: the bench's thousand loopback clients would be
 * cut off in the first second. Whitelisting loopback turns those checks off, as the relay's
 * quotas are lifted (and it keeps nostream from calling Redis on every frame, where the relay's
 * limiter still runs).
 */
function settingsYaml(): string {
  const ips = LOOPBACK.map((ip) => `      - "${ip}"`).join('\n');
  return `info:
  relay_url: ws://localhost
  name: nostream (buzz-relay storm bench)
network:
  maxPayloadSize: 524288
  remoteIpHeader: x-forwarded-for
limits:
  connection:
    ipWhitelist:
${ips}
  message:
    ipWhitelist:
${ips}
  event:
    whitelists:
      pubkeys: []
      ipAddresses:
${ips.replaceAll('      -', '        -')}
`;
}

export async function startNostreamEnv(dir: string, log: (msg: string) => void = logLine): Promise<BenchEnv> {
  const started = Date.now();
  const cluster = await PgCluster.start({ persistent: false, withReplica: true });
  const configDir = mkdtempSync(path.join(tmpdir(), 'nostream-bench-'));
  let redis: Awaited<ReturnType<typeof startRedisServer>> | undefined;
  let relay: RelayChild | undefined;
  try {
    const { writerUrl, readerUrl } = await cluster.createDatabase(DATABASE);
    await migrate(dir, writerUrl);
    redis = await startRedisServer();
    writeFileSync(path.join(configDir, 'settings.yaml'), settingsYaml());
    const port = await freePort();
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH ?? '',
      RELAY_PORT: String(port),
      // the relay's own key is derived from it (docker-compose passes ${SECRET}); events are refused without it
      SECRET: randomBytes(32).toString('hex'),
      DB_URI: writerUrl,
      // docker-compose.yml's pool sizes (the code's own defaults are 0 and 3 per worker)
      DB_MIN_POOL_SIZE: process.env.NOSTREAM_DB_MIN_POOL_SIZE ?? '16',
      DB_MAX_POOL_SIZE: process.env.NOSTREAM_DB_MAX_POOL_SIZE ?? '64',
      DB_ACQUIRE_CONNECTION_TIMEOUT: '60000',
      READ_REPLICA_ENABLED: 'false',
      REDIS_URI: redis.url,
      NOSTR_CONFIG_DIR: configDir,
      ...(process.env.NOSTREAM_WORKER_COUNT ? { WORKER_COUNT: process.env.NOSTREAM_WORKER_COUNT } : {}),
      // nostream's own debug filter (e.g. NOSTREAM_DEBUG='worker:*'), printed into the relay's output
      ...(process.env.NOSTREAM_DEBUG ? { DEBUG: process.env.NOSTREAM_DEBUG } : {}),
    };
    relay = await spawnChild(process.execPath, [path.join(dir, 'dist/src/index.js')], { cwd: dir, env }, async (child, output) => {
      await waitForPort(port, START_TIMEOUT_MS, () => (child.exitCode === null ? undefined : `nostream exited with ${child.exitCode}:\n${output()}`));
      return `ws://localhost:${port}`;
    });
    log(`postgres pair + nostream ${relay.url} (pid ${relay.child.pid}) ready in ${Date.now() - started} ms`);
    const ready = relay;
    const readyRedis = redis;
    return envOf(
      cluster,
      writerUrl,
      readerUrl ?? writerUrl,
      ready,
      async () => {
        await ready.stop();
        await readyRedis.stop();
        await cluster.stop();
        rmSync(configDir, { recursive: true, force: true });
      },
      () => Promise.reject(new Error('nostream: no relay schema to copy')),
    );
  } catch (err) {
    await relay?.stop();
    await redis?.stop();
    await cluster.stop();
    rmSync(configDir, { recursive: true, force: true });
    throw err;
  }
}

/** nostream's own migrations, with its own knex (knexfile.js reads DATABASE_URI). */
function migrate(dir: string, writerUrl: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(dir, 'node_modules/knex/bin/cli.js'), 'migrate:latest'], {
      cwd: dir,
      env: { PATH: process.env.PATH ?? '', DATABASE_URI: writerUrl },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`nostream migrations exited with ${code}:\n${out}`))));
  });
}

/** nostream's workers print nothing when they listen: wait until the port accepts. */
async function waitForPort(port: number, timeoutMs: number, exited: () => string | undefined): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const why = exited();
    if (why !== undefined) throw new Error(why);
    const ok = await new Promise<boolean>((resolve) => {
      const socket = createConnection({ host: '127.0.0.1', port });
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`nostream did not listen on ${port} within ${timeoutMs} ms`);
}
