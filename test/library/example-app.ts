/**
 * examples/reports-service built and run the way another team would: against the `npm pack`
 * tarball of packages/read-path (so only what `files` ships is there, through its `exports` map),
 * compiled with tsc (`skipLibCheck: false`, as the example's tsconfig says), started as a process
 * on the real writer + replica pair, and its own Vitest e2e tests run in the built copy.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { cpSync, mkdirSync, readdirSync, readFileSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Pool } from 'pg';
import { createTestDatabase, type TestDatabase } from '../harness/test-database.js';
import { adminPool, waitUntil } from '../routing/database-layer.js';

export const ROOT = resolve(import.meta.dirname, '../..');
export const EXAMPLE = join(ROOT, 'examples/reports-service');
const PACKAGE = join(ROOT, 'packages/read-path');

/** A database of the pair with the example's one table and report 1 in it, replayed on the replica. */
export async function reportsDatabase(): Promise<{ db: TestDatabase; writer: Pool }> {
  const db = await createTestDatabase();
  const writer = adminPool(db.writerUrl);
  await writer.query(`create table reports (id int primary key, title text not null)`);
  await writer.query(`insert into reports values (1, 'Q3 draft')`);
  await db.waitForReplica();
  return { db, writer };
}

/** Packs packages/read-path into `dir`; returns the tarball's path. */
export function packReadPath(dir: string): string {
  // --ignore-scripts: `npm test` has built packages/read-path/dist already (prepack would again).
  execFileSync('npm', ['pack', '--ignore-scripts', '--silent', '--pack-destination', dir], { cwd: PACKAGE, stdio: ['ignore', 'pipe', 'pipe'] });
  const tarball = readdirSync(dir).find((f) => f.startsWith('buzz-relay-read-path-') && f.endsWith('.tgz'));
  if (!tarball) throw new Error(`npm pack left no tarball in ${dir}`);
  return join(dir, tarball);
}

export interface BuildOptions {
  /** The `type` of the copy's package.json (default `module`). */
  readonly moduleKind?: 'module' | 'commonjs';
  /** Link every package of this repository's node_modules into the copy (one copy of each for both). */
  readonly linkOurs?: boolean;
}

/**
 * A copy of the example in `app` with the tarball unpacked as its `node_modules/@buzz-relay/read-path`,
 * as an ES module package or a CommonJS one, compiled. Every other package is linked from ours,
 * or else resolves from the folders above `app` (Node's and tsc's lookup), so where `app` is
 * decides which versions it gets.
 */
export function buildExample(app: string, tarball: string, { moduleKind = 'module', linkOurs = false }: BuildOptions = {}): void {
  cpSync(EXAMPLE, app, { recursive: true, filter: (src) => !/\/(node_modules|dist)(\/|$)/.test(src.slice(EXAMPLE.length)) });
  const manifest = JSON.parse(readFileSync(join(app, 'package.json'), 'utf8')) as Record<string, unknown>;
  writeFileSync(join(app, 'package.json'), JSON.stringify({ ...manifest, type: moduleKind }, null, 2));
  const unpacked = join(app, 'node_modules/@buzz-relay/read-path');
  mkdirSync(unpacked, { recursive: true });
  execFileSync('tar', ['-xzf', tarball, '-C', unpacked, '--strip-components=1']);
  if (linkOurs) {
    const ours = realpathSync(join(ROOT, 'node_modules'));
    for (const entry of readdirSync(ours)) {
      // @buzz-relay holds this repository's workspace link, replaced above by the packed copy.
      if (entry.startsWith('.') || entry === '@buzz-relay') continue;
      symlinkSync(join(ours, entry), join(app, 'node_modules', entry));
    }
  }
  try {
    execFileSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', join(app, 'tsconfig.json')], { cwd: app, stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (err) {
    const { stdout, stderr } = err as { stdout?: Buffer; stderr?: Buffer };
    throw new Error(`tsc failed for the example in ${app}:\n${stdout?.toString() ?? ''}${stderr?.toString() ?? ''}`);
  }
}

export interface Answer {
  readonly status: number;
  readonly body: unknown;
  readonly retryAfter?: string;
}

/** The built example as a process, listening on a free port. */
export class RunningExample {
  private output = '';

  private constructor(
    private readonly child: ChildProcess,
    private base = '',
  ) {
    child.stdout!.on('data', (d: Buffer) => (this.output += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (this.output += d.toString()));
  }

  static async start(app: string, env: Record<string, string>): Promise<RunningExample> {
    const child = spawn(process.execPath, [join(app, 'dist/main.js')], { cwd: app, env: { PATH: process.env.PATH ?? '', PORT: '0', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    const running = new RunningExample(child);
    await waitUntil('reports-service to listen', () => /listening on (http:\/\/\S+)/.test(running.output) || child.exitCode !== null, 30_000);
    const url = /listening on (http:\/\/\S+)/.exec(running.output)?.[1];
    if (!url) throw new Error(`reports-service did not start:\n${running.output}`);
    running.base = url;
    return running;
  }

  /** What the process wrote so far (stdout and stderr). */
  get log(): string {
    return this.output;
  }

  async get(path: string): Promise<Answer> {
    const res = await fetch(`${this.base}${path}`);
    const retryAfter = res.headers.get('retry-after');
    return { status: res.status, body: await res.json(), ...(retryAfter === null ? {} : { retryAfter }) };
  }

  /** Waits until a routed read of report `id` is served by the replica (the fence open). */
  async whenReplicaServes(id: number): Promise<void> {
    const servedBy = async () => ((await this.get(`/reports/${id}`)).body as { servedBy?: string }).servedBy;
    await waitUntil('a routed read served by the replica', async () => (await servedBy()) === 'replica', 30_000, 100);
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null) return;
    const exited = new Promise((r) => this.child.once('exit', r));
    this.child.kill('SIGTERM');
    await exited;
  }
}

export interface VitestOutcome {
  readonly code: number | null;
  readonly total: number;
  readonly passed: number;
  readonly failed: number;
}

/** The number of `it(` in the example's e2e spec: what a full pass must report. */
export function declaredE2eTests(): number {
  return [...readFileSync(join(EXAMPLE, 'test/reports.e2e-spec.ts'), 'utf8').matchAll(/^\s*it\(/gm)].length;
}

/** Runs the example's Vitest e2e tests in the built copy `app` (`npm run test:e2e`), on the pair given. */
export async function runVitestE2e(app: string, writerUrl: string, readerUrl: string): Promise<VitestOutcome> {
  const report = join(app, 'vitest.json');
  const vitest = join(ROOT, 'node_modules/vitest/vitest.mjs');
  const run = spawn(process.execPath, [vitest, 'run', '--config', './vitest.config.e2e.ts', '--reporter=json', `--outputFile=${report}`], {
    cwd: app,
    env: { PATH: process.env.PATH ?? '', REPORTS_WRITER_URL: writerUrl, REPORTS_READER_URL: readerUrl },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  run.stdout!.on('data', (d: Buffer) => (log += d.toString()));
  run.stderr!.on('data', (d: Buffer) => (log += d.toString()));
  const code = await new Promise<number | null>((resolve) => run.once('exit', resolve));
  if (code !== 0) console.log(`vitest exited ${code} in ${app}:\n${log}`);
  const result = JSON.parse(readFileSync(report, 'utf8')) as { numTotalTests: number; numPassedTests: number; numFailedTests: number };
  return { code, total: result.numTotalTests, passed: result.numPassedTests, failed: result.numFailedTests };
}
