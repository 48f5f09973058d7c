/**
 * Jest globalSetup of the `integration` project: one Postgres writer + streaming replica for the
 * whole run, a migrated template database, and the connection info exported to the test
 * processes through process.env (objects made here never reach test modules).
 *
 * Providers, in order:
 * - external: BUZZ_TEST_DATABASE_URL + BUZZ_TEST_READ_DATABASE_URL both set (no fault helpers);
 * - docker:   PG_PROVIDER=docker and a Docker engine answers /_ping (testcontainers, loaded lazily);
 * - local:    the default, PgCluster from local binaries (tmpfs when possible, ~1 s).
 * See docs/testing.md.
 */
import { existsSync, readFileSync } from 'node:fs';
import { request } from 'node:http';
import { createRequire, register } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Kysely, PostgresDialect } from 'kysely';
import { Pool } from 'pg';

import type { PgCluster } from '../../src/database/embedded/pg-cluster.js';

export type PgProvider = 'local' | 'external' | 'docker';

/** What globalTeardown finds on globalThis. */
export interface PgTestServers {
  provider: PgProvider;
  /** Maintenance-database URLs (the template and per-file databases are created through them). */
  writerAdminUrl: string;
  readerAdminUrl: string;
  cluster?: PgCluster;
  stop(): Promise<void>;
}

const TEMPLATE_DATABASE = 'buzz_template';
const HANDLE_KEY = Symbol.for('buzz-relay.test.pg-servers');
const REPLICA_WAIT_MS = 30_000;

type ClusterModule = typeof import('../../src/database/embedded/pg-cluster.js') &
  typeof import('../../src/database/embedded/pg-replication.js');
type MigratorModule = typeof import('../../packages/read-path/src/database/migrator.js');
let project: ClusterModule & MigratorModule;

export default async function globalSetup(): Promise<void> {
  const started = Date.now();
  project = await loadProjectModules();
  verbose(`project modules loaded in ${Date.now() - started} ms`);
  const servers = await startServers();
  try {
    const templateStarted = Date.now();
    await buildTemplate(servers);
    verbose(`${TEMPLATE_DATABASE} migrated in ${Date.now() - templateStarted} ms`);
  } catch (err) {
    await servers.stop();
    throw err;
  }
  exportEnv(servers);
  (globalThis as Record<symbol, unknown>)[HANDLE_KEY] = servers;
  log(`${servers.provider} Postgres pair + migrated ${TEMPLATE_DATABASE} ready in ${Date.now() - started} ms`);
}

async function startServers(): Promise<PgTestServers> {
  const external = externalUrls();
  if (external) return { provider: 'external', ...external, stop: () => dropTemplate(external.writerAdminUrl) };
  if (process.env.PG_PROVIDER === 'external') {
    throw new Error('PG_PROVIDER=external needs both BUZZ_TEST_DATABASE_URL and BUZZ_TEST_READ_DATABASE_URL');
  }
  if (process.env.PG_PROVIDER === 'docker') {
    if (await dockerAnswers()) return startDockerPair();
    log('PG_PROVIDER=docker but no Docker engine answers /_ping: using local PostgreSQL binaries');
  }
  return startLocalPair();
}

function externalUrls(): { writerAdminUrl: string; readerAdminUrl: string } | undefined {
  const writer = process.env.BUZZ_TEST_DATABASE_URL?.trim();
  const reader = process.env.BUZZ_TEST_READ_DATABASE_URL?.trim();
  if (!writer && !reader) return undefined;
  if (!writer || !reader) {
    throw new Error('set both BUZZ_TEST_DATABASE_URL and BUZZ_TEST_READ_DATABASE_URL (or neither)');
  }
  return { writerAdminUrl: writer, readerAdminUrl: reader };
}

async function startLocalPair(): Promise<PgTestServers> {
  const cluster = await project.PgCluster.start({ persistent: false, withReplica: true, log: verbose });
  return {
    provider: 'local',
    writerAdminUrl: cluster.writerUrl,
    readerAdminUrl: cluster.readerUrl as string,
    cluster,
    stop: () => cluster.stop(),
  };
}

/** Drops and recreates the template, migrates it, and waits until the replica serves it. */
async function buildTemplate(servers: PgTestServers): Promise<void> {
  await dropTemplate(servers.writerAdminUrl); // an earlier run against external servers may have crashed
  const admin = pool(servers.writerAdminUrl);
  try {
    await admin.query(`CREATE DATABASE ${TEMPLATE_DATABASE}`);
  } finally {
    await admin.end();
  }
  // destroy() closes the pool: CREATE DATABASE ... TEMPLATE fails while the template has sessions.
  const db = new Kysely<any>({ dialect: new PostgresDialect({ pool: pool(withDatabase(servers.writerAdminUrl)) }) });
  try {
    await project.migrateToLatest(db);
  } finally {
    await db.destroy();
  }
  await waitForTemplateOnReplica(servers);
}

/** External servers outlive the run: leave them as found. */
async function dropTemplate(writerAdminUrl: string): Promise<void> {
  const admin = pool(writerAdminUrl);
  try {
    await admin.query(`DROP DATABASE IF EXISTS ${TEMPLATE_DATABASE} WITH (FORCE)`);
  } finally {
    await admin.end();
  }
}

async function waitForTemplateOnReplica(servers: PgTestServers): Promise<void> {
  const writer = pool(servers.writerAdminUrl);
  const reader = pool(servers.readerAdminUrl);
  try {
    await project.waitForReplicaCatchUp(writer, reader, REPLICA_WAIT_MS);
  } finally {
    await Promise.all([writer.end(), reader.end()]);
  }
  await project.waitUntilConnectable(withDatabase(servers.readerAdminUrl), REPLICA_WAIT_MS);
}

function exportEnv(servers: PgTestServers): void {
  const env: Record<string, string | undefined> = {
    BUZZ_TEST_PG_PROVIDER: servers.provider,
    BUZZ_TEST_PG_WRITER_URL: servers.writerAdminUrl,
    BUZZ_TEST_PG_READER_URL: servers.readerAdminUrl,
    BUZZ_TEST_PG_TEMPLATE: TEMPLATE_DATABASE,
  };
  const cluster = servers.cluster;
  if (cluster) {
    const info = cluster.info;
    Object.assign(env, {
      BUZZ_TEST_PG_BASE: info.baseDir,
      BUZZ_TEST_PG_BIN: info.binDir,
      BUZZ_TEST_PG_WRITER_PORT: String(info.writerPort),
      BUZZ_TEST_PG_REPLICA_PORT: String(info.replicaPort),
      BUZZ_TEST_PG_RUNAS: info.runAs ? `${info.runAs.uid}:${info.runAs.gid}` : '',
    });
  }
  for (const [key, value] of Object.entries(env)) {
    if (value !== undefined) process.env[key] = value;
  }
}

function pool(url: string): Pool {
  const p = new Pool({ connectionString: url, max: 2, connectionTimeoutMillis: 5000 });
  p.on('error', (err) => log(`idle admin connection error: ${err.message}`));
  return p;
}

function withDatabase(adminUrl: string, database = TEMPLATE_DATABASE): string {
  const url = new URL(adminUrl);
  url.pathname = `/${database}`;
  return url.toString();
}

function log(msg: string): void {
  process.stderr.write(`[pg-harness] ${msg}\n`);
}

/** Step timings, printed with BUZZ_TEST_PG_VERBOSE=1. */
function verbose(msg: string): void {
  if (process.env.BUZZ_TEST_PG_VERBOSE === '1') log(msg);
}

// ---------------------------------------------------------------------------------------------
// Loading the project's TypeScript from here.
//
// Jest transforms this file, but (the project being ESM) Node itself loads it and resolves its
// imports, so `../../src/x.js` would look for a compiled file that does not exist. So before
// importing, this thread transpiles the import graph of the entry files with the `typescript`
// ts-jest already loaded (isolated transpile, no type check), and a small module-loader hook
// maps each missing relative `.js` under the repo to its `.ts` and serves the transpiled text.
// A `.ts` outside that graph (should not happen) is transpiled in the hook thread instead.

const LOADER_SOURCE = `
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
let rootUrl;
let sources;
let compilerOptions;
let ts;
export function initialize(data) {
  ({ rootUrl, compilerOptions } = data);
  sources = new Map(Object.entries(data.sources));
}
function ours(url) { return url.startsWith(rootUrl) && !url.includes('/node_modules/'); }
export async function resolve(specifier, context, next) {
  try {
    return await next(specifier, context);
  } catch (err) {
    const relativeJs = /^\\.{1,2}\\/.*\\.js$/.test(specifier);
    if (err?.code !== 'ERR_MODULE_NOT_FOUND' || !relativeJs || !ours(context.parentURL ?? '')) throw err;
    return next(specifier.slice(0, -3) + '.ts', context);
  }
}
export async function load(url, context, next) {
  if (!url.endsWith('.ts') || !ours(url)) return next(url, context);
  let source = sources.get(url);
  if (source === undefined) {
    ts ??= createRequire(new URL('package.json', rootUrl))('typescript');
    const fileName = fileURLToPath(url);
    source = ts.transpileModule(readFileSync(fileName, 'utf8'), { fileName, compilerOptions }).outputText;
  }
  return { format: 'module', source, shortCircuit: true };
}
`;
const LOADER_FLAG = Symbol.for('buzz-relay.test.ts-loader');
const ENTRY_FILES = [
  'src/database/embedded/pg-cluster.ts',
  'src/database/embedded/pg-replication.ts',
  'packages/read-path/src/database/migrator.ts',
];

async function loadProjectModules(): Promise<ClusterModule & MigratorModule> {
  registerTypeScriptLoader();
  const [cluster, replication, migrator] = await Promise.all([
    import('../../src/database/embedded/pg-cluster.js'),
    import('../../src/database/embedded/pg-replication.js'),
    import('../../packages/read-path/src/database/migrator.js'),
  ]);
  return { ...cluster, ...replication, ...migrator };
}

function registerTypeScriptLoader(): void {
  const registry = globalThis as Record<symbol, unknown>;
  if (registry[LOADER_FLAG]) return;
  const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
  const ts = createRequire(join(repoRoot, 'package.json'))('typescript') as typeof import('typescript');
  const compilerOptions = transpileOptions(ts);
  const sources = transpileImportGraph(ts, compilerOptions, ENTRY_FILES.map((file) => join(repoRoot, file)));
  const rootUrl = pathToFileURL(`${repoRoot}/`).href;
  register(`data:text/javascript,${encodeURIComponent(LOADER_SOURCE)}`, {
    data: { rootUrl, sources, compilerOptions },
  });
  registry[LOADER_FLAG] = true;
}

/** file URL -> transpiled ESM, for the entries and every relative import they reach. */
function transpileImportGraph(
  ts: typeof import('typescript'),
  compilerOptions: import('typescript').CompilerOptions,
  entries: string[],
): Record<string, string> {
  const sources: Record<string, string> = {};
  const queue = [...entries];
  for (let fileName = queue.shift(); fileName !== undefined; fileName = queue.shift()) {
    const url = pathToFileURL(fileName).href;
    if (url in sources) continue;
    const text = readFileSync(fileName, 'utf8');
    sources[url] = ts.transpileModule(text, { fileName, compilerOptions }).outputText;
    for (const { fileName: specifier } of ts.preProcessFile(text, true, true).importedFiles) {
      const target = relativeTsFile(fileName, specifier);
      if (target !== undefined) queue.push(target);
    }
  }
  return sources;
}

function relativeTsFile(from: string, specifier: string): string | undefined {
  if (!/^\.{1,2}\//.test(specifier) || !specifier.endsWith('.js')) return undefined;
  const candidate = resolve(dirname(from), `${specifier.slice(0, -3)}.ts`);
  return existsSync(candidate) ? candidate : undefined;
}

function transpileOptions(ts: typeof import('typescript')): import('typescript').CompilerOptions {
  return {
    module: ts.ModuleKind.ESNext,
    target: ts.ScriptTarget.ES2022,
    esModuleInterop: true,
    experimentalDecorators: true,
    isolatedModules: true,
  };
}

// ---------------------------------------------------------------------------------------------
// Docker (opt-in). Never loaded unless PG_PROVIDER=docker and the engine answers.

/** DOCKER_HOST (unix:// or tcp://), else /var/run/docker.sock; GET /_ping with a 1 s timeout. */
function dockerAnswers(): Promise<boolean> {
  const target = dockerEndpoint();
  if (target === undefined) return Promise.resolve(false);
  return new Promise((resolve) => {
    const req = request({ ...target, path: '/_ping', method: 'GET', timeout: 1000 }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(false));
    req.end();
  });
}

function dockerEndpoint(): { socketPath?: string; host?: string; port?: number } | undefined {
  const host = process.env.DOCKER_HOST?.trim();
  if (host?.startsWith('unix://')) return { socketPath: host.slice('unix://'.length) };
  if (host?.startsWith('tcp://')) {
    const url = new URL(host.replace(/^tcp:/, 'http:'));
    return { host: url.hostname, port: Number(url.port || 2375) };
  }
  if (host) return undefined;
  return existsSync('/var/run/docker.sock') ? { socketPath: '/var/run/docker.sock' } : undefined;
}

const DOCKER_IMAGE = 'postgres:15-alpine';
const DOCKER_SETTINGS = ['fsync=off', 'synchronous_commit=on', 'full_page_writes=off', 'hot_standby_feedback=on'];

/** Two containers on a private network: a primary, and a standby made by pg_basebackup from it. */
async function startDockerPair(): Promise<PgTestServers> {
  const { GenericContainer, Network, Wait } = await import('testcontainers');
  const network = await new Network().start();
  const settings = DOCKER_SETTINGS.flatMap((s) => ['-c', s]);
  const primary = await new GenericContainer(DOCKER_IMAGE)
    .withNetwork(network)
    .withNetworkAliases('pg-primary')
    .withEnvironment({ POSTGRES_HOST_AUTH_METHOD: 'trust' })
    .withCopyContentToContainer([
      {
        content: 'echo "host replication all all trust" >> "$PGDATA/pg_hba.conf"\n',
        target: '/docker-entrypoint-initdb.d/replication.sh',
      },
    ])
    .withTmpFs({ '/var/lib/postgresql/data': 'rw' })
    .withCommand(['postgres', '-c', 'max_connections=200', ...settings])
    .withExposedPorts(5432)
    .withWaitStrategy(Wait.forLogMessage(/database system is ready to accept connections/, 2))
    .start();
  const replicaScript = [
    'until pg_basebackup -h pg-primary -U postgres -D /tmp/replica -X stream -c fast; do',
    '  rm -rf /tmp/replica; sleep 0.5',
    'done',
    'touch /tmp/replica/standby.signal',
    `echo "primary_conninfo = 'host=pg-primary user=postgres application_name=buzz_replica'" \\`,
    '  >> /tmp/replica/postgresql.auto.conf',
    `exec postgres -D /tmp/replica -c listen_addresses='*' -c max_connections=200 ${settings.join(' ')}`,
  ].join('\n');
  const replica = await new GenericContainer(DOCKER_IMAGE)
    .withNetwork(network)
    .withUser('postgres')
    .withEntrypoint(['sh', '-c', replicaScript])
    .withExposedPorts(5432)
    .withWaitStrategy(Wait.forLogMessage(/ready to accept read-only connections/))
    .start();
  const url = (c: typeof primary): string => `postgres://postgres@${c.getHost()}:${c.getMappedPort(5432)}/postgres`;
  return {
    provider: 'docker',
    writerAdminUrl: url(primary),
    readerAdminUrl: url(replica),
    stop: async () => {
      await replica.stop();
      await primary.stop();
      await network.stop();
    },
  };
}
