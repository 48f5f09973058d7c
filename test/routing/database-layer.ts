/**
 * Test helpers: the database layer alone (the relay's four database modules, no transports) on a test
 * database, metric deltas from the default prom-client registry, and raw admin clients.
 */
import { ConsoleLogger, INestApplicationContext } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Pool } from 'pg';
import { register } from 'prom-client';
import { loadConfig } from '../../src/config/app-config.js';
import { DatabaseService } from '../../packages/read-path/src/database/database.service.js';
import { ReaderPool } from '../../packages/read-path/src/database/reader-pool.js';
import { DatabaseMetrics } from '../../packages/read-path/src/metrics/database-metrics.service.js';
import { ReplicaFenceService } from '../../packages/read-path/src/replica-fence/replica-fence.service.js';
import { relayDatabaseModules } from '../../src/relay-database.modules.js';
import { RoutedReader } from '../../packages/read-path/src/routing/routed-reader.service.js';
import { SteppedReplicaFence } from '../harness/stepped-replica-fence.js';
import type { TestDatabase } from '../harness/test-database.js';

export interface DatabaseLayer {
  readonly app: INestApplicationContext;
  readonly database: DatabaseService;
  /** The reader pool the routing layer checks out (not exported by the package). */
  readonly readers: ReaderPool;
  readonly fence: SteppedReplicaFence;
  readonly routed: RoutedReader;
  readonly metrics: DatabaseMetrics;
  close(): Promise<void>;
}

export async function startDatabaseLayer(db: TestDatabase, env: Record<string, string> = {}, withReader = true): Promise<DatabaseLayer> {
  const config = loadConfig({
    DATABASE_URL: db.writerUrl,
    ...(withReader ? { READ_DATABASE_URL: db.readerUrl } : {}),
    BUZZ_POOL_METRICS_INTERVAL_SECS: '1',
    ...env,
  });
  // The fence service gains step() (a beat on demand); otherwise these are the relay's modules.
  const app = await Test.createTestingModule({ imports: relayDatabaseModules(config) })
    .overrideProvider(ReplicaFenceService)
    .useClass(SteppedReplicaFence)
    .compile();
  app.useLogger(process.env.BUZZ_TEST_LOGS ? new ConsoleLogger() : false);
  // The context's bootstrap hooks start the layer (connect, migrate, fence probe).
  await app.init();
  const fence = app.get(ReplicaFenceService);
  if (!(fence instanceof SteppedReplicaFence)) throw new Error('the fence override did not take');
  return {
    app,
    database: app.get(DatabaseService),
    readers: app.get(ReaderPool),
    fence,
    routed: app.get(RoutedReader),
    metrics: app.get(DatabaseMetrics),
    close: () => app.close(),
  };
}

type Labels = Record<string, string>;

/** Sum of the matching series of a counter or gauge (0 when absent). */
export async function metricValue(name: string, labels: Labels = {}): Promise<number> {
  const metric = register.getSingleMetric(name);
  if (!metric) return 0;
  const data = await metric.get();
  return data.values
    .filter((v) => Object.entries(labels).every(([k, want]) => String((v.labels as Labels)[k]) === want))
    .reduce((sum, v) => sum + v.value, 0);
}

/** Snapshot of every route-decision series, for exact before/after comparisons. */
export async function routeDecisions(): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  const metric = register.getSingleMetric('buzz_db_route_decision');
  if (!metric) return out;
  for (const v of (await metric.get()).values) {
    const l = v.labels as Labels;
    out.set(`${l.path}/${l.decision}/${l.reason}`, v.value);
  }
  return out;
}

export async function spills(): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  const metric = register.getSingleMetric('buzz_db_reader_spill_total');
  if (!metric) return out;
  for (const v of (await metric.get()).values) {
    const l = v.labels as Labels;
    out.set(`${l.path}/${l.reason}`, v.value);
  }
  return out;
}

/** The series that changed between two snapshots, with their increments. */
export function delta(before: Map<string, number>, after: Map<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of after) {
    const d = v - (before.get(k) ?? 0);
    if (d !== 0) out[k] = d;
  }
  return out;
}

export function adminPool(url: string, max = 4): Pool {
  const pool = new Pool({ connectionString: url, max, connectionTimeoutMillis: 5000 });
  pool.on('error', () => undefined);
  return pool;
}

/** Polls until `pred` holds (never a fixed sleep); fails with `what` after timeoutMs. */
export async function waitUntil(what: string, pred: () => Promise<boolean> | boolean, timeoutMs = 10_000, stepMs = 20): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await pred())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${what}`);
    await new Promise((r) => setTimeout(r, stepMs));
  }
}
