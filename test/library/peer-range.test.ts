/**
 * The far ends of @buzz-relay/read-path's peer ranges, as an app on them would meet the package:
 * Nest 12.0 (`@nestjs/common` 12.0.0, the floor of `^12.0.0`) and kysely 0.29 (the newest the range
 * takes, whose migrator moved to `kysely/migration`), installed by the examples/peer-range
 * workspace. examples/reports-service is built there from the packed package as an ES module app
 * and as a CommonJS one, type-checked with `skipLibCheck: false`, and run on the real writer +
 * replica; the ES module one also passes its Vitest e2e tests.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Pool } from 'pg';
import { faultSupport, type TestDatabase } from '../harness/test-database.js';
import { buildExample, declaredE2eTests, packReadPath, reportsDatabase, ROOT, RunningExample, runVitestE2e } from './example-app.js';

const PEER_RANGE = join(ROOT, 'examples/peer-range');
const faults = faultSupport();
const itWithFaults = faults.supported ? it : it.skip;

let db: TestDatabase;
let writer: Pool;
let work: string;
let apps: string;
const running: RunningExample[] = [];

/** The version of `name` an app in examples/peer-range/apps resolves. */
function resolvedVersion(name: string): string {
  return (JSON.parse(readFileSync(join(PEER_RANGE, 'node_modules', name, 'package.json'), 'utf8')) as { version: string }).version;
}

beforeAll(async () => {
  ({ db, writer } = await reportsDatabase());
  work = mkdtempSync(join(tmpdir(), 'peer-range-'));
  // Inside the workspace, so Node and tsc find its node_modules before ours.
  apps = join(PEER_RANGE, 'apps');
  mkdirSync(apps, { recursive: true });
}, 120_000);

afterAll(async () => {
  for (const service of running) await service.stop();
  await writer?.end();
  await db?.drop();
  if (work) rmSync(work, { recursive: true, force: true });
  if (apps) rmSync(apps, { recursive: true, force: true });
}, 60_000);

describe('examples/reports-service on Nest 12.0 and kysely 0.29', () => {
  let tarball: string;
  beforeAll(() => {
    tarball = packReadPath(work);
  });

  it('installs the versions under test', () => {
    expect(['@nestjs/common', '@nestjs/core', 'kysely'].map(resolvedVersion)).toEqual(['12.0.0', '12.0.1', '0.29.9']);
  });

  it.each(['module', 'commonjs'] as const)('as a %s app: type-checks with skipLibCheck false and serves a routed read from the replica', async (moduleKind) => {
    const app = join(apps, `${moduleKind}-${process.pid}`);
    buildExample(app, tarball, { moduleKind });
    const service = await RunningExample.start(app, { REPORTS_WRITER_URL: db.writerUrl, REPORTS_READER_URL: db.readerUrl });
    running.push(service);
    await service.whenReplicaServes(1);
    expect(await service.get('/reports/1')).toEqual({ status: 200, body: { id: 1, title: 'Q3 draft', servedBy: 'replica' } });
    expect(await service.get('/reports/1/current')).toEqual({ status: 200, body: { id: 1, title: 'Q3 draft', servedBy: 'writer' } });
    expect(service.log).not.toMatch(/ERROR/);
  }, 180_000);

  itWithFaults('as an ES module app: passes its Vitest e2e tests on the pair', async () => {
    const declared = declaredE2eTests();
    expect(await runVitestE2e(join(apps, `module-${process.pid}`), db.writerUrl, db.readerUrl)).toEqual({ code: 0, total: declared, passed: declared, failed: 0 });
  }, 240_000);
});
