/**
 * Every stdout line is JSON (issue 20): the relay started the way `npm start` starts it, with no
 * DATABASE_URL, so it brings up its own embedded Postgres writer and replica, serves some
 * traffic, meets a real database fault and shuts down on SIGTERM. Each line of its stdout
 * parses as one JSON object, and a logged error carries `err` as an object (pino's serializer:
 * type, message, stack and the pg error code), not as a string.
 *
 * The relay keeps its embedded data under `<package root>/.data/pg`. So that this test neither
 * shares nor stops a developer's own `npm start` cluster, the built relay runs from a temporary
 * package root that links to this checkout's dist/ and node_modules/ (node keeps the linked
 * paths with --preserve-symlinks), and the data lands in that directory.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { getPublicKey } from 'nostr-tools/pure';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { eventually } from '../harness/eventually.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const START_TIMEOUT_MS = 120_000;

type LogLine = Record<string, unknown> & { msg?: string; err?: unknown };

let dir: string;
let child: ChildProcess;
let stdout = '';
let stderr = '';
/** NIP-11 `self` of the first start. */
let firstSelf: string | undefined;

function lines(): string[] {
  return stdout.split('\n').filter((l) => l.length > 0);
}

function parsed(): LogLine[] {
  return lines().flatMap((l) => {
    try {
      return [JSON.parse(l) as LogLine];
    } catch {
      return [];
    }
  });
}

const PRESERVE = ['--preserve-symlinks', '--preserve-symlinks-main'];

beforeAll(async () => {
  if (!existsSync(path.join(ROOT, 'dist/src/main.js'))) throw new Error('dist/src/main.js is missing: run `npm run build` first (npm test does)');
  dir = mkdtempSync(path.join(tmpdir(), 'buzz-json-stdout-'));
  chmodSync(dir, 0o755); // the embedded Postgres runs as an unprivileged user and must reach .data/
  writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'buzz-relay', private: true, type: 'module' }));
  symlinkSync(path.join(ROOT, 'dist'), path.join(dir, 'dist'));
  symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'));
  await launch();
}, START_TIMEOUT_MS + 10_000);

/** Starts the relay as `npm start` does, from the temporary package root; resolves once it listens. */
async function launch(): Promise<void> {
  stdout = '';
  stderr = '';
  child = spawn(process.execPath, [...PRESERVE, '--max-semi-space-size=16', path.join(dir, 'dist/src/main.js')], {
    // npm start's defaults: no database, no LOG_LEVEL; only the ports are left to the OS.
    env: { PATH: process.env.PATH ?? '', BUZZ_BIND_ADDR: '127.0.0.1:0', BUZZ_METRICS_PORT: '0' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  await eventually('the relay listens', async () => parsed().some((l) => String(l.msg).startsWith('buzz-relay listening on')), START_TIMEOUT_MS);
}

function httpBase(): string {
  return `http://localhost:${/listening on ws:\/\/localhost:(\d+)/.exec(stdout)![1]}`;
}

async function relaySelf(): Promise<{ self?: string; pubkey?: string }> {
  return (await (await fetch(httpBase(), { headers: { accept: 'application/nostr+json' } })).json()) as { self?: string; pubkey?: string };
}

async function stop(): Promise<number | null> {
  child.kill('SIGTERM');
  return new Promise<number | null>((resolve) => child.once('exit', resolve));
}

afterAll(async () => {
  if (child && child.exitCode === null && child.signalCode === null) {
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));
  }
  if (dir) rmSync(dir, { recursive: true, force: true });
}, 60_000);

it('prints only JSON lines from start to shutdown, and logs errors as objects', async () => {
  const embedded = parsed().find((l) => l.component === 'embedded-postgres' && /^writer postgres:\/\//.test(String(l.msg)));
  expect(embedded).toBeDefined();
  // The data went to the temporary package root, not to a shared fallback directory.
  expect(String(embedded!.msg)).toContain(`data in ${path.join(dir, '.data', 'pg')}`);
  const writerUrl = /^writer (\S+),/.exec(String(embedded!.msg))![1];
  const http = httpBase();

  // Some traffic: a page, a refused bridge read, a 404, the probes.
  expect((await fetch(`${http}/`)).status).toBe(200);
  expect((await fetch(`${http}/query`, { method: 'POST', body: '[{}]' })).status).toBe(401);
  expect((await fetch(`${http}/no-such-route`)).status).toBe(404);
  expect((await fetch(`${http}/readyz`)).status).toBe(200);
  firstSelf = (await relaySelf()).self;

  // An error path: the relay's own database sessions are terminated under it (57P01).
  const admin = new Client({ connectionString: writerUrl });
  await admin.connect();
  try {
    await admin.query(`select pg_terminate_backend(pid) from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid() and backend_type = 'client backend'`);
  } finally {
    await admin.end();
  }
  await eventually('an error logged with its pg code', async () => parsed().some((l) => (l.err as { code?: unknown } | undefined)?.code === '57P01')).catch((e: Error) => {
    throw new Error(`${e.message}; stdout:\n${stdout}`);
  });

  expect(await stop()).toBe(0);

  const notJson = lines().filter((l) => {
    try {
      const v: unknown = JSON.parse(l);
      return typeof v !== 'object' || v === null || Array.isArray(v);
    } catch {
      return true;
    }
  });
  expect({ notJson, stderr: stderr.split('\n').filter((l) => l.length > 0 && !l.includes('ExperimentalWarning')) }).toEqual({ notJson: [], stderr: [] });

  const msgs = parsed().map((l) => String(l.msg));
  expect(msgs).toEqual(expect.arrayContaining([expect.stringMatching(/^buzz-relay metrics on http:/), expect.stringMatching(/^SIGTERM, shutting down$/), expect.stringMatching(/^shutdown: done in \d+ ms$/)]));
  expect(msgs.filter((m) => m === 'request completed' || m === 'HTTP bridge request').length).toBeGreaterThanOrEqual(3);

  const errors = parsed().filter((l) => l.err !== undefined);
  expect(errors.length).toBeGreaterThan(0);
  for (const line of errors) {
    expect(line.err).toEqual(expect.objectContaining({ type: expect.any(String), message: expect.any(String), stack: expect.any(String) }));
  }
  const pgError = errors.find((l) => (l.err as { code?: unknown }).code === '57P01')!;
  expect((pgError.err as { message: string }).message).toMatch(/terminating connection/);
}, 120_000);

it('keeps one relay key across restarts, and lets `npm run admin` find its database without DATABASE_URL', async () => {
  await launch();
  const state = path.join(dir, '.data');
  const key = readFileSync(path.join(state, 'relay.key'), 'utf8').trim();
  expect(statSync(path.join(state, 'relay.key')).mode & 0o777).toBe(0o600);
  // NIP-11 names the kept key (NIP-29 clients find the group state by it), the same as before the restart.
  expect(firstSelf).toBe(getPublicKey(Buffer.from(key, 'hex')));
  expect(await relaySelf()).toEqual(expect.objectContaining({ self: firstSelf, pubkey: firstSelf }));
  const running = JSON.parse(readFileSync(path.join(state, 'embedded.json'), 'utf8')) as { writerUrl: string; pid: number };
  expect(running.pid).toBe(child.pid);
  // The CLI of the same checkout, with no DATABASE_URL, uses the running relay's database.
  const cli = await promisify(execFile)(process.execPath, [...PRESERVE, path.join(dir, 'dist/src/admin/admin.cli.js'), 'list-members'], { env: { PATH: process.env.PATH ?? '' } });
  expect(cli.stderr).toContain(`admin: using the database of the relay running on ${state} (writer ${running.writerUrl})`);
  expect(cli.stdout).toBe('no members in localhost\n');
  expect(await stop()).toBe(0);
  expect(existsSync(path.join(state, 'embedded.json'))).toBe(false);
  expect(readFileSync(path.join(state, 'relay.key'), 'utf8').trim()).toBe(key);
}, 2 * START_TIMEOUT_MS);
