/**
 * The start-up banner, on the built relay and the real writer + replica pair. Started on a
 * pseudo-terminal (util-linux `script`), as a person runs `npm start`, it prints one plain block
 * after the JSON lines: the relay's URLs, its database without the password, and next commands
 * that run as printed (a channel is created, a member added). Started with stdout on a pipe, as
 * under a process manager, every line stays JSON and there is no banner.
 */
import { ChildProcess, spawn, spawnSync } from 'node:child_process';
import path from 'node:path';
import { Pool } from 'pg';
import { eventually } from '../harness/eventually.js';
import { newIdentity } from '../harness/nostr-clients.js';
import { relayEnv } from '../harness/relay-fixture.js';
import { startRelay } from '../harness/relay-process.js';
import { createTestDatabase, TestDatabase } from '../harness/test-database.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const hasScript = spawnSync('sh', ['-c', 'command -v script']).status === 0;

let db: TestDatabase;
let writer: Pool;
let tty: ChildProcess | undefined;
let screen = '';

beforeAll(async () => {
  db = await createTestDatabase();
  writer = new Pool({ connectionString: db.writerUrl, max: 2 });
  writer.on('error', () => undefined);
});

afterAll(async () => {
  if (tty?.pid !== undefined && tty.exitCode === null) {
    process.kill(-tty.pid, 'SIGTERM');
    await new Promise((r) => tty!.once('exit', r));
  }
  await writer?.end();
  await db?.drop();
});

/** The URL with a password: the harness's servers trust loopback, so it still connects. */
function withPassword(url: string): string {
  const u = new URL(url);
  u.password = 'not-to-be-printed';
  return u.toString();
}

const maybe = hasScript ? it : it.skip;

maybe('on a terminal: one plain block with the URLs, the database and commands that run as printed', async () => {
  const env = {
    ...relayEnv(db),
    DATABASE_URL: withPassword(db.writerUrl),
    PATH: process.env.PATH ?? '',
    BUZZ_BIND_ADDR: '127.0.0.1:0',
    BUZZ_METRICS_PORT: '0',
    LOG_LEVEL: 'warn',
  };
  tty = spawn('script', ['-qfec', `exec ${process.execPath} ${path.join(ROOT, 'dist/src/main.js')}`, '/dev/null'], { env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  tty.stdout!.on('data', (d: Buffer) => (screen += d.toString()));
  await eventually('the banner', async () => screen.includes('Stop with Ctrl-C'), 60_000);
  const text = screen.replace(/\r/g, '');
  const block = text.slice(text.indexOf('buzz-relay is ready'));
  const port = /WebSocket +ws:\/\/localhost:(\d+) /.exec(block)?.[1];
  expect(port).toBeDefined();
  // The same addresses the JSON lines name, no password, the reader named.
  expect(text).toContain(`"msg":"buzz-relay listening on ws://localhost:${port}"`);
  expect(block).toContain(`HTTP bridge  http://localhost:${port}`);
  expect(block).toMatch(/Metrics +http:\/\/127\.0\.0\.1:\d+\/metrics/);
  expect(block).toContain(`writer ${withPassword(db.writerUrl).replace('not-to-be-printed', '***')}`);
  expect(block).toContain(`reader ${db.readerUrl}`);
  expect(screen).not.toContain('not-to-be-printed');

  // "create a channel", as printed (the owner's key given, so the checkout's .data/ is left alone).
  const create = /create a channel +(.+)\n/.exec(block)![1];
  expect(create).toBe(`RELAY_URL=ws://localhost:${port} npm run create-channel -- general`);
  const created = spawnSync('sh', ['-c', create], { cwd: ROOT, encoding: 'utf8', env: { PATH: process.env.PATH ?? '', CHANNEL_PRIVATE_KEY: Buffer.from(newIdentity().sk).toString('hex') } });
  expect(created.status).toBe(0);
  const channel = /^channel=(\S+)$/m.exec(created.stdout)![1];
  const { rows } = await writer.query<{ name: string }>('select name from channels where id = $1', [channel]);
  expect(rows).toEqual([{ name: 'general' }]);

  // "add a member", as printed, with this relay's DATABASE_URL.
  const add = /add a member +(.+)\n/.exec(block)![1];
  expect(add).toBe("npm run admin -- add-member <npub>  (with this relay's DATABASE_URL)");
  const member = newIdentity().pubkey;
  const added = spawnSync('sh', ['-c', `npm run admin -- add-member ${member}`], { cwd: ROOT, encoding: 'utf8', env: { PATH: process.env.PATH ?? '', DATABASE_URL: db.writerUrl } });
  expect(added.status).toBe(0);
  const members = await writer.query('select 1 from relay_members where pubkey = $1', [member]);
  expect(members.rowCount).toBe(1);
  expect(block).toMatch(/open the docs +README\.md.*docs\/moderation\.md/);
}, 120_000);

it('on a pipe: every stdout line is JSON and there is no banner', async () => {
  const relay = await startRelay(relayEnv(db, { LOG_LEVEL: 'info' }));
  try {
    await eventually('both start-up lines', async () => relay.output().includes('buzz-relay listening on'));
  } finally {
    await relay.stop();
  }
  const lines = relay.output().split('\n').filter((l) => l.length > 0);
  expect(lines.length).toBeGreaterThan(2);
  for (const line of lines) expect(() => JSON.parse(line)).not.toThrow();
  expect(relay.output()).not.toContain('buzz-relay is ready');
});
