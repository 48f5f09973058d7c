/**
 * examples/reports-service as another team would use it, on this repository's versions of Nest
 * and kysely (linked, one copy of each for the app and the package): built against the packed
 * package (test/library/example-app.ts), started as a process on the real writer + replica, and
 * its own Vitest e2e tests run in the built copy. test/library/peer-range.test.ts does the same on
 * the far ends of the package's peer ranges.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Pool } from 'pg';
import { faultSupport, type TestDatabase } from '../harness/test-database.js';
import { buildExample, declaredE2eTests, EXAMPLE, packReadPath, reportsDatabase, RunningExample, runVitestE2e } from './example-app.js';

const faults = faultSupport();
const itWithFaults = faults.supported ? it : it.skip;

let db: TestDatabase;
let writer: Pool;
let work: string;
let app: string;
let service: RunningExample;

beforeAll(async () => {
  ({ db, writer } = await reportsDatabase());
  work = mkdtempSync(join(tmpdir(), 'reports-service-'));
  app = join(work, 'app');
  buildExample(app, packReadPath(work), { linkOurs: true });
  service = await RunningExample.start(app, { REPORTS_WRITER_URL: db.writerUrl, REPORTS_READER_URL: db.readerUrl });
}, 300_000);

afterAll(async () => {
  await service?.stop();
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
    expect(service.log).not.toMatch(/ERROR/);
  });

  it('the built service serves a routed read from the proved replica', async () => {
    await service.whenReplicaServes(1);
    expect(await service.get('/reports/1')).toEqual({ status: 200, body: { id: 1, title: 'Q3 draft', servedBy: 'replica' } });
  });

  // Its own e2e tests, as its team runs them (`npm run test:e2e`, Vitest, the Nest CLI's default),
  // against the packed package: replica vs writer, stale, shed, the writer cut off.
  itWithFaults('passes its Vitest e2e tests on the pair', async () => {
    const declared = declaredE2eTests();
    expect(await runVitestE2e(app, db.writerUrl, db.readerUrl)).toEqual({ code: 0, total: declared, passed: declared, failed: 0 });
    expect(declared).toBeGreaterThanOrEqual(4);
  }, 240_000);

  it("the app's own errors keep Nest's format: the library's filter answers only the library's errors", async () => {
    expect(await service.get('/reports/999/current')).toEqual({ status: 404, body: { message: 'Not Found', statusCode: 404 } });
    expect(await service.get('/reports/abc')).toEqual({ status: 400, body: { message: 'Validation failed (numeric string is expected)', error: 'Bad Request', statusCode: 400 } });
  });
});
