/**
 * The boundary of `@buzz-relay/read-path`, checked without a database: that its sources load only
 * what its manifest declares, that the relay reaches it only by name, that the four modules form
 * no import cycle, that each can be built alone from its own options, and that importing them
 * registers only `buzz_db_*` families.
 */
import { jest } from '@jest/globals';
import { Logger, Module } from '@nestjs/common';
import { Test, TestingModule } from '@nestjs/testing';
import { builtinModules } from 'node:module';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { register } from 'prom-client';
import { DatabaseModule } from './database/database.module.js';
import type { DatabaseModuleOptions } from './database/database.options.js';
import { DatabaseService } from './database/database.service.js';
import { ReaderPool } from './database/reader-pool.js';
import { HistoryReadGate } from './history-reads/history-read-gate.js';
import { HistoryReadsModule } from './history-reads/history-reads.module.js';
import { ReplicaFenceModule } from './replica-fence/replica-fence.module.js';
import { ReplicaFenceService } from './replica-fence/replica-fence.service.js';
import { BOUNDED } from './routing/route-predicate.js';
import { RoutedReaderModule } from './routing/routed-reader.module.js';
import { RoutedReader } from './routing/routed-reader.service.js';
import { ReadPathModule } from './read-path.module.js';
import { ROUTED_READER_OPTIONS } from './routing/routed-reader.options.js';
import { REPLICA_FENCE_OPTIONS } from './replica-fence/replica-fence.options.js';

const SRC = import.meta.dirname;
const PACKAGE = resolve(SRC, '..');
const REPO = resolve(PACKAGE, '../..');
const LAYERS = ['database', 'replica-fence', 'history-reads', 'routing'] as const;

/** Relative specifiers of `from '…'`, `import '…'` and `import('…')`, resolved to .ts files. */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const specs = [...text.matchAll(/(?:from\s+|import\s*\(\s*|import\s+)'(\.{1,2}\/[^']+)'/g)].map((m) => m[1]);
  return specs.map((s) => resolve(dirname(file), s.replace(/\.js$/, '.ts')));
}

function closureOf(entry: string): Set<string> {
  const seen = new Set<string>();
  const stack = [entry];
  while (stack.length > 0) {
    const f = stack.pop()!;
    if (seen.has(f)) continue;
    seen.add(f);
    stack.push(...importsOf(f));
  }
  return seen;
}

const layerOf = (file: string) => relative(SRC, file).split('/')[0];

/** The non-test TypeScript files under a directory. */
function sourcesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts') && !f.endsWith('.spec.ts'))
    .map((f) => join(dir, f));
}

const sourcesOf = (layer: string) => sourcesUnder(join(SRC, layer));

/** The package names of the bare specifiers a file imports (`@scope/name/x` → `@scope/name`). */
function packagesImportedBy(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const specs = [...text.matchAll(/(?:from\s+|import\s*\(\s*|import\s+)'([^'.][^']*)'/g)].map((m) => m[1]);
  return specs.map((s) => s.split('/').slice(0, s.startsWith('@') ? 2 : 1).join('/'));
}

describe('@buzz-relay/read-path: import graph', () => {
  const manifest = JSON.parse(readFileSync(join(PACKAGE, 'package.json'), 'utf8')) as { dependencies?: object; peerDependencies?: object };
  const declared = new Set([...Object.keys(manifest.dependencies ?? {}), ...Object.keys(manifest.peerDependencies ?? {})]);
  const packageSources = [...sourcesUnder(SRC), ...sourcesUnder(join(PACKAGE, 'migrations'))];

  it('the entry points reach no file outside the package', () => {
    const files = [...closureOf(join(SRC, 'index.ts')), ...closureOf(join(SRC, 'internal.ts'))].map((f) => relative(PACKAGE, f));
    expect(files).toContain('src/database/database.module.ts');
    expect(files.filter((f) => f.startsWith('..'))).toEqual([]);
  });

  it('its sources load only Node built-ins and the packages its manifest declares', () => {
    // `pg` types come from `@types/pg` (a dependency, so an importer's tsc finds them).
    const undeclared = new Set<string>();
    for (const file of packageSources) {
      for (const name of packagesImportedBy(file)) {
        if (!name.startsWith('node:') && !builtinModules.includes(name) && !declared.has(name)) undeclared.add(`${relative(PACKAGE, file)}: ${name}`);
      }
    }
    expect([...undeclared]).toEqual([]);
    expect(declared.has('@types/pg')).toBe(true);
  });

  it('the relay reaches the package by its name, never by a path into its sources', () => {
    const relay = ['src', 'bench', 'scripts'].flatMap((dir) => sourcesUnder(join(REPO, dir)));
    const reaching = relay.filter((file) => importsOf(file).some((target) => target.startsWith(PACKAGE)));
    expect(reaching.map((f) => relative(REPO, f))).toEqual([]);
  });

  it('never loads @nestjs/terminus (an optional peer) from the main entry: the health indicator has its own, ./terminus', () => {
    const loadsTerminus = (entry: string) => [...closureOf(entry)].filter((f) => /from '@nestjs\/terminus'/.test(readFileSync(f, 'utf8'))).map((f) => relative(SRC, f));
    expect(loadsTerminus(join(SRC, 'index.ts'))).toEqual([]);
    expect(loadsTerminus(join(SRC, 'internal.ts'))).toEqual([]);
    expect(loadsTerminus(join(SRC, 'terminus.ts'))).toEqual(['read-path.health.ts']);
  });

  it('the four layers import one way: routing → replica-fence, history-reads → database, never back', () => {
    const edges = new Set<string>();
    for (const layer of LAYERS) {
      for (const file of sourcesOf(layer)) {
        for (const target of importsOf(file)) {
          const to = layerOf(target);
          if (to !== layer && (LAYERS as readonly string[]).includes(to)) edges.add(`${layer} → ${to}`);
        }
      }
    }
    const allowed = new Set(['routing → database', 'routing → replica-fence', 'routing → history-reads', 'replica-fence → database']);
    expect([...edges].filter((e) => !allowed.has(e))).toEqual([]);
    // The allowed set is a strict order, so no cycle can form; the graph still holds the real edges.
    expect(edges.has('routing → replica-fence')).toBe(true);
  });
});

const OPTIONS: DatabaseModuleOptions = {
  writerUrl: 'postgres://buzz:pw@10.255.255.1:5432/buzz',
  readerUrl: 'postgres://buzz:pw@10.255.255.1:5433/buzz',
  poolSize: 4,
  readPoolSize: 10,
  statementTimeoutMs: 30_000,
  lockTimeoutMs: 5000,
  idleTxnTimeoutMs: 60_000,
  statementCacheSize: 100,
  migrate: false,
  partitionMaintenance: false,
};

describe('@buzz-relay/read-path: the reader pool is the routing layer\'s door', () => {
  it('no entry point exports ReaderPool, so an importer cannot inject it', async () => {
    for (const entry of ['./index.js', './internal.js']) {
      const exported = Object.values((await import(entry)) as Record<string, unknown>);
      expect(exported).not.toContain(ReaderPool);
    }
  });

  it('DatabaseService offers the reader\'s state, never a reader checkout', () => {
    const members = Object.getOwnPropertyNames(DatabaseService.prototype).filter((m) => /reader/i.test(m));
    expect(members.sort()).toEqual(['getReaderState', 'hasReader', 'pingReader', 'readerUrl']);
  });
});

describe('@buzz-relay/read-path: kysely', () => {
  it('re-exports the Kysely and sql its handles are built with', async () => {
    const entry = await import('./index.js');
    const kysely = await import('kysely');
    expect([entry.Kysely, entry.sql]).toEqual([kysely.Kysely, kysely.sql]);
  });
});

describe('@buzz-relay/read-path: each module alone, from its own options', () => {
  const built: TestingModule[] = [];
  const build = async (imports: Parameters<typeof Test.createTestingModule>[0]['imports']) => {
    const ref = await Test.createTestingModule({ imports }).compile();
    built.push(ref);
    return ref;
  };
  afterAll(async () => {
    for (const ref of built) await ref.close();
  });

  it('HistoryReadsModule needs nothing else', async () => {
    const ref = await build([HistoryReadsModule.forRoot({ readPoolSize: 10 })]);
    expect(ref.get(HistoryReadGate).capacity).toBe(8);
  });

  it('DatabaseModule needs nothing else, and forRootAsync takes a factory', async () => {
    const ref = await build([DatabaseModule.forRootAsync({ useFactory: async () => OPTIONS })]);
    const db = ref.get(DatabaseService);
    expect(db.writerUrl).toBe(OPTIONS.writerUrl);
    expect(db.hasReader).toBe(true);
  });

  it('a routed read without a fence probe goes to the writer as `disabled`, and the fence says so at start', async () => {
    const warn = jest.spyOn(Logger.prototype, 'warn');
    const ref = await build([
      DatabaseModule.forRoot(OPTIONS),
      ReplicaFenceModule.forRoot({ probe: false }),
      HistoryReadsModule.forRoot({ readPoolSize: 10 }),
      RoutedReaderModule.forRoot({ readMaxAgeMs: 2000, writerReadCap: 2 }),
    ]);
    const fence = ref.get(ReplicaFenceService);
    expect(await fence.spawn()).toBe(false);
    expect(warn.mock.calls.map((c) => String(c[0])).some((m) => m.includes('probe off') && m.includes('served by the writer'))).toBe(true);
    warn.mockRestore();
    const series = async () => (await register.getSingleMetric('buzz_db_route_decision')!.get()).values.find((v) => v.labels.path === 'bridge_query' && v.labels.decision === 'writer' && v.labels.reason === 'disabled')?.value ?? 0;
    const before = await series();
    // route() is RoutedReader's own (reads go through read()/session()); the decision is what is checked here.
    const route = (r: RoutedReader) => (r as unknown as { route(req: { path: string; predicate: typeof BOUNDED }): Promise<unknown> }).route({ path: 'bridge_query', predicate: BOUNDED });
    expect(await route(ref.get(RoutedReader))).toEqual({ target: 'writer' });
    expect(await series()).toBe(before + 1);
  });

  it('importing the four modules registers the database families only (no buzz_ws_*, no buzz_readiness_state)', async () => {
    await build([
      DatabaseModule.forRoot(OPTIONS),
      ReplicaFenceModule.forRoot({ probe: true }),
      HistoryReadsModule.forRoot({ readPoolSize: 10 }),
      RoutedReaderModule.forRoot({ readMaxAgeMs: 2000, writerReadCap: 2 }),
    ]);
    const names = register.getMetricsAsArray().map((m) => m.name);
    expect(names).toContain('buzz_db_route_decision');
    expect(names.filter((n) => !n.startsWith('buzz_db_'))).toEqual([]);
  });

  it('ReadPathModule wires the four from one option set: the history-read gate follows database.readPoolSize', async () => {
    const ref = await build([ReadPathModule.forRoot({ database: OPTIONS, routing: { readMaxAgeMs: 2000, tenantSharePercent: 25 } })]);
    expect(ref.get(DatabaseService).writerUrl).toBe(OPTIONS.writerUrl);
    const gate = ref.get(HistoryReadGate);
    expect([gate.capacity, gate.share]).toEqual([8, 2]);
    expect(ref.get(REPLICA_FENCE_OPTIONS)).toEqual({ probe: true });
    expect(ref.get(RoutedReader)).toBeInstanceOf(RoutedReader);
    // Without readPoolSize the reader pool takes the writer's size, and so does the gate.
    const { readPoolSize: _unset, ...rest } = OPTIONS;
    const sized = await build([ReadPathModule.forRoot({ database: rest, fence: { probe: false }, routing: { readMaxAgeMs: 2000 } })]);
    expect(sized.get(HistoryReadGate).capacity).toBe(3);
  });

  it('ReadPathModule.forRootAsync takes its options from an injected provider', async () => {
    const CONFIG = Symbol('CONFIG');
    @Module({ providers: [{ provide: CONFIG, useValue: { writer: OPTIONS.writerUrl, budget: 1500 } }], exports: [CONFIG] })
    class ConfigModule {}
    const ref = await build([
      ReadPathModule.forRootAsync({
        imports: [ConfigModule],
        inject: [CONFIG],
        useFactory: async (c: { writer: string; budget: number }) => ({ database: { ...OPTIONS, writerUrl: c.writer }, routing: { readMaxAgeMs: c.budget } }),
      }),
    ]);
    expect(ref.get(ROUTED_READER_OPTIONS)).toEqual({ readMaxAgeMs: 1500 });
    expect(ref.get(HistoryReadGate).capacity).toBe(8);
  });

  it('a probe interval outside 300..10000 ms fails at construction, naming the option', async () => {
    await expect(build([DatabaseModule.forRoot(OPTIONS), ReplicaFenceModule.forRoot({ probe: true, probeIntervalMs: 50 })])).rejects.toThrow(/probeIntervalMs/);
  });
});
