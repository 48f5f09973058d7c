/**
 * The README is a tested path: its code blocks, run as a newcomer runs them, against the built
 * relay started the way `npm start` starts it (dist/src/main.js, the default community seeded),
 * here on the harness's writer + replica pair and on a free port (RELAY_URL, which the README's
 * code reads, points at it).
 *
 * - The first block keeps the two commands a newcomer starts with (`npm ci && npm start`, then
 *   `npm test`); they are not run here (the second is this very suite).
 * - "First contact": every shell line is run as written from the checkout, and the JavaScript
 *   block is saved as `hello.mjs` and run with node, three times: each run creates its own
 *   channel, posts into it and reads its message back; the database holds what it says.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { newIdentity } from '../harness/nostr-clients.js';
import { RelayFixture, startRelayFixture } from '../harness/relay-fixture.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const README = readFileSync(path.join(ROOT, 'README.md'), 'utf8');

interface Block {
  readonly lang: string;
  readonly code: string;
  /** The `## ` heading the block sits under ('' before the first). */
  readonly section: string;
}

function codeBlocks(markdown: string): Block[] {
  const blocks: Block[] = [];
  let section = '';
  let open: { lang: string; lines: string[] } | undefined;
  for (const line of markdown.split('\n')) {
    if (open) {
      if (line.startsWith('```')) {
        blocks.push({ lang: open.lang, code: open.lines.join('\n'), section });
        open = undefined;
      } else open.lines.push(line);
    } else if (line.startsWith('```')) open = { lang: line.slice(3).trim(), lines: [] };
    else if (line.startsWith('## ')) section = line.slice(3).trim();
  }
  return blocks;
}

/** A shell block's commands, without comments and blank lines. */
const commands = (code: string) =>
  code
    .split('\n')
    .map((l) => l.replace(/\s+#.*$/, '').trim())
    .filter((l) => l.length > 0 && !l.startsWith('#'));

const blocks = codeBlocks(README);
const firstContact = blocks.filter((b) => b.section === 'First contact');
let fixture: RelayFixture;
let dir: string;

beforeAll(async () => {
  fixture = await startRelayFixture();
  // hello.mjs is saved "in the checkout": here a directory that resolves packages like it.
  dir = mkdtempSync(path.join(tmpdir(), 'buzz-readme-'));
  symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'));
  writeFileSync(path.join(dir, 'package.json'), '{"type":"module"}\n');
});

afterAll(async () => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  await fixture?.close();
});

it('starts with the two commands: run the relay, run the tests', () => {
  expect(blocks[0].lang).toBe('sh');
  expect(commands(blocks[0].code)).toEqual(['npm ci && npm start', 'npm test']);
});

it('has a first-contact section with a shell block and one JavaScript block', () => {
  expect(firstContact.map((b) => b.lang)).toEqual(['sh', 'js']);
  expect(README).toContain('docs/moderation.md');
});

it("runs the first-contact shell commands as written: the channel exists, owned by the command's key", async () => {
  const owner = newIdentity();
  for (const command of commands(firstContact[0].code)) {
    const run = spawnSync('sh', ['-c', command], {
      cwd: ROOT,
      encoding: 'utf8',
      // The owner's key is given, so the run leaves the checkout's .data/ alone.
      env: { PATH: process.env.PATH ?? '', RELAY_URL: fixture.relay.wsUrl, CHANNEL_PRIVATE_KEY: Buffer.from(owner.sk).toString('hex') },
    });
    expect({ command, status: run.status, stderr: run.status === 0 ? '' : run.stderr }).toEqual({ command, status: 0, stderr: '' });
    const channel = /^channel=(\S+)$/m.exec(run.stdout)?.[1];
    expect(run.stdout).toContain(`owner=${owner.pubkey}`);
    const { rows } = await fixture.writer.query('select name from channels where id = $1', [channel]);
    expect(rows).toEqual([{ name: 'general' }]);
  }
}, 120_000);

it('runs the JavaScript example as written, three times: it creates its channel, posts and reads "hi" back', async () => {
  const file = path.join(dir, 'hello.mjs');
  writeFileSync(file, firstContact[1].code);
  for (let run = 0; run < 3; run++) {
    const out = spawnSync(process.execPath, [file], { cwd: dir, encoding: 'utf8', timeout: 30_000, env: { PATH: process.env.PATH ?? '', RELAY_URL: fixture.relay.wsUrl } });
    expect({ status: out.status, stderr: out.stderr }).toEqual({ status: 0, stderr: '' });
    const printed = /^channel (\S+): hi$/m.exec(out.stdout);
    expect(printed).not.toBeNull();
    const stored = await fixture.writer.query(`select e.content from events e where e.channel_id = $1 and e.kind = 9`, [printed![1]]);
    expect(stored.rows).toEqual([{ content: 'hi' }]);
  }
}, 120_000);
