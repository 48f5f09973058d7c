/**
 * examples/reports-service, run the way another team would: packages/read-path is packed with
 * `npm pack` (so only what `files` ships is there), unpacked as `node_modules/@buzz-relay/read-path`
 * of a copy of the example, its peers and dependencies resolved from this repository's
 * node_modules (one copy of @nestjs/common for both), compiled with tsc against the shipped
 * declarations through the `exports` map (a deep `@buzz-relay/read-path/dist/...` import would not
 * resolve), and started on the real writer + replica pair. Divergent fixtures (replay paused on the replica, the row changed on the
 * writer) show which server answered each read.
 */
import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Pool } from 'pg';
import { createTestDatabase, faultSupport, type TestDatabase } from '../harness/test-database.js';
import { adminPool, waitUntil } from '../routing/database-layer.js';

const ROOT = resolve(import.meta.dirname, '../..');
const EXAMPLE = join(ROOT, 'examples/reports-service');
const PACKAGE = join(ROOT, 'packages/read-path');
const faults = faultSupport();
const itWithFaults = faults.supported ? it : it.skip;

let db: TestDatabase;
let writer: Pool;
let replica: Pool;
let work: string;
let child: ChildProcess;
let out = '';
let base: string;
let app: string;

/** The packed package unpacked into a copy of the example; every other package linked from ours. */
function installExample(): string {
  // --ignore-scripts: `npm test` has built packages/read-path/dist already (prepack would again).
  execFileSync('npm', ['pack', '--ignore-scripts', '--silent', '--pack-destination', work], { cwd: PACKAGE, stdio: ['ignore', 'pipe', 'pipe'] });
  const tarball = readdirSync(work).find((f) => f.startsWith('buzz-relay-read-path-') && f.endsWith('.tgz'));
  if (!tarball) throw new Error(`npm pack left no tarball in ${work}`);
  const app = join(work, 'app');
  cpSync(EXAMPLE, app, { recursive: true, filter: (src) => !/\/(node_modules|dist)(\/|$)/.test(src.slice(EXAMPLE.length)) });
  const unpacked = join(app, 'node_modules/@buzz-relay/read-path');
  mkdirSync(unpacked, { recursive: true });
  execFileSync('tar', ['-xzf', join(work, tarball), '-C', unpacked, '--strip-components=1']);
  const ours = realpathSync(join(ROOT, 'node_modules'));
  for (const entry of readdirSync(ours)) {
    // @buzz-relay holds this repository's workspace link, replaced above by the packed copy.
    if (entry.startsWith('.') || entry === '@buzz-relay') continue;
    symlinkSync(join(ours, entry), join(app, 'node_modules', entry));
  }
  execFileSync(process.execPath, [join(ours, 'typescript/bin/tsc'), '-p', join(app, 'tsconfig.json')], { stdio: ['ignore', 'pipe', 'pipe'] });
  return app;
}

async function startExample(app: string): Promise<string> {
  child = spawn(process.execPath, [join(app, 'dist/main.js')], {
    env: {
      PATH: process.env.PATH ?? '',
      PORT: '0',
      REPORTS_WRITER_URL: db.writerUrl,
      REPORTS_READER_URL: db.readerUrl,
      // One reader connection, so one history permit: a second concurrent routed read is shed.
      REPORTS_READ_POOL_SIZE: '1',
      // A wide budget: the replica keeps answering (proved, stale by design) while replay is paused.
      REPORTS_READ_MAX_AGE_MS: '20000',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  await waitUntil('reports-service to listen', () => /listening on (http:\/\/\S+)/.test(out) || child.exitCode !== null, 30_000);
  const url = /listening on (http:\/\/\S+)/.exec(out)?.[1];
  if (!url) throw new Error(`reports-service did not start:\n${out}`);
  return url;
}

async function get(path: string): Promise<{ status: number; body: unknown; retryAfter?: string }> {
  const res = await fetch(`${base}${path}`);
  const retryAfter = res.headers.get('retry-after');
  return { status: res.status, body: await res.json(), ...(retryAfter === null ? {} : { retryAfter }) };
}

const servedByReplica = async () => ((await get('/reports/1')).body as { servedBy?: string }).servedBy === 'replica';

beforeAll(async () => {
  db = await createTestDatabase();
  writer = adminPool(db.writerUrl);
  replica = adminPool(db.readerUrl);
  await writer.query(`create table reports (id int primary key, title text not null)`);
  await writer.query(`insert into reports values (1, 'Q3 draft')`);
  await db.waitForReplica();
  work = mkdtempSync(join(tmpdir(), 'reports-service-'));
  app = installExample();
  base = await startExample(app);
}, 300_000);

afterAll(async () => {
  if (child && child.exitCode === null) {
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await exited;
  }
  await replica?.end();
  await writer?.end();
  await db?.drop();
  if (work) rmSync(work, { recursive: true, force: true });
}, 60_000);

describe('examples/reports-service on @buzz-relay/read-path', () => {
  it('imports the package through its public entry only', () => {
    for (const file of readdirSync(join(EXAMPLE, 'src'))) {
      const imports = [...readFileSync(join(EXAMPLE, 'src', file), 'utf8').matchAll(/from '(@buzz-relay[^']*)'/g)].map((m) => m[1]);
      expect(imports.every((s) => s === '@buzz-relay/read-path')).toBe(true);
    }
    expect(out).not.toMatch(/ERROR/);
  });

  it('the built service serves a routed read from the proved replica', async () => {
    await waitUntil('the fence to open (a routed read served by the replica)', servedByReplica, 30_000, 100);
    expect(await get('/reports/1')).toEqual({ status: 200, body: { id: 1, title: 'Q3 draft', servedBy: 'replica' } });
  });

  // Its own e2e tests, as its team runs them (`npm run test:e2e`, Vitest, the Nest CLI's default),
  // against the packed package: replica vs writer, stale, shed, the writer cut off.
  itWithFaults('passes its Vitest e2e tests on the pair', async () => {
    const report = join(work, 'vitest.json');
    const run = spawn(process.execPath, [join(app, 'node_modules/vitest/vitest.mjs'), 'run', '--config', './vitest.config.e2e.ts', '--reporter=json', `--outputFile=${report}`], {
      cwd: app,
      env: { PATH: process.env.PATH ?? '', REPORTS_WRITER_URL: db.writerUrl, REPORTS_READER_URL: db.readerUrl },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let log = '';
    run.stdout!.on('data', (d: Buffer) => (log += d.toString()));
    run.stderr!.on('data', (d: Buffer) => (log += d.toString()));
    const code = await new Promise<number | null>((resolve) => run.once('exit', resolve));
    if (code !== 0) console.log(`vitest exited ${code}:\n${log}`);
    const result = JSON.parse(readFileSync(report, 'utf8')) as { numTotalTests: number; numPassedTests: number; numFailedTests: number };
    const declared = [...readFileSync(join(EXAMPLE, 'test/reports.e2e-spec.ts'), 'utf8').matchAll(/^\s*it\(/gm)].length;
    expect({ code, total: result.numTotalTests, passed: result.numPassedTests, failed: result.numFailedTests }).toEqual({ code: 0, total: declared, passed: declared, failed: 0 });
    expect(declared).toBeGreaterThanOrEqual(4);
  }, 240_000);

  it("the app's own errors keep Nest's format: the library's filter answers only the library's errors", async () => {
    expect(await get('/reports/999/current')).toEqual({ status: 404, body: { message: 'Not Found', statusCode: 404 } });
    expect(await get('/reports/abc')).toEqual({ status: 400, body: { message: 'Validation failed (numeric string is expected)', error: 'Bad Request', statusCode: 400 } });
  });
});
