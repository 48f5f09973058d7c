/**
 * Which folders of src/ may import which (docs/architecture.md, "Who imports whom"), as one rule
 * for the whole app: the folders stand in tiers, and a folder imports only folders of a lower
 * tier. So the folders form no cycle, siblings of one tier stay independent of each other, and a
 * new folder must be given its place here before it can be imported. Every non-spec file under
 * src/ counts, type-only imports included (they couple the sources all the same).
 */
import { relative, sep } from 'node:path';
import { resolveRelative, sourceFilesUnder, specifiersOf } from '../test/harness/source-graph.js';

const SRC = import.meta.dirname;

/** The tiers, lowest first. `(root)` is the files at the top of src/ (the bootstrap, the app module). */
const TIERS: ReadonlyArray<{ readonly folders: readonly string[]; readonly what: string }> = [
  { folders: ['nostr'], what: 'the protocol: kinds, events, filters, client messages, refusals; Node built-ins only' },
  { folders: ['config', 'client'], what: 'the validated configuration; the client library (it speaks the protocol, nothing else)' },
  { folders: ['database', 'metrics', 'redis', 'tracing'], what: 'infrastructure: the embedded Postgres and migrations, Prometheus, the Redis connection, OpenTelemetry' },
  { folders: ['common', 'health', 'ratelimit'], what: 'shared HTTP and signing pieces; liveness and readiness; quotas' },
  { folders: ['memory', 'moderation', 'tenancy', 'threads'], what: 'the memory budget, bans and authority, Host → community, thread overlays' },
  { folders: ['channels'], what: 'NIP-29 channels: membership, access, read scopes, group commands' },
  { folders: ['events'], what: 'the write path and history reads' },
  { folders: ['auth', 'commands', 'scale-out'], what: 'NIP-42/NIP-98 on top of events; the commands ingest executes (registered with it); several pods on one Redis' },
  { folders: ['subscriptions'], what: 'the WebSocket gateway' },
  { folders: ['bridge'], what: 'the HTTP bridge (it reuses the gateway’s admission pieces)' },
  { folders: ['(root)'], what: 'composition: the app module, the bootstrap, graceful shutdown' },
  { folders: ['admin'], what: 'the operator CLI, a Nest context built from the composition' },
];

const tierOf = new Map(TIERS.flatMap(({ folders }, tier) => folders.map((f) => [f, tier] as const)));

const folderOf = (file: string) => {
  const parts = relative(SRC, file).split(sep);
  return parts.length > 1 ? parts[0] : '(root)';
};

/** Folder → the folders its files import, each with one file that does (for the message). */
function folderGraph(): Map<string, Map<string, string>> {
  const graph = new Map<string, Map<string, string>>();
  for (const file of sourceFilesUnder(SRC)) {
    const from = folderOf(file);
    const edges = graph.get(from) ?? graph.set(from, new Map()).get(from)!;
    for (const spec of specifiersOf(file)) {
      const target = resolveRelative(file, spec);
      if (target === undefined || !target.startsWith(SRC)) continue;
      const to = folderOf(target);
      if (to !== from && !edges.has(to)) edges.set(to, relative(SRC, file));
    }
  }
  return graph;
}

describe('the folders of src/', () => {
  const graph = folderGraph();

  it('reads the whole tree (sanity: known edges are there)', () => {
    expect(graph.get('events')?.has('nostr')).toBe(true);
    expect(graph.get('bridge')?.has('threads')).toBe(true);
  });

  it('each have a tier', () => {
    const folders = new Set([...graph.keys(), ...[...graph.values()].flatMap((edges) => [...edges.keys()])]);
    expect([...folders].filter((f) => !tierOf.has(f)).sort()).toEqual([]);
  });

  it('import only folders of a lower tier', () => {
    const upward: string[] = [];
    for (const [from, edges] of graph) {
      for (const [to, file] of edges) {
        if (tierOf.get(to)! >= tierOf.get(from)!) upward.push(`${from} → ${to} (${file})`);
      }
    }
    expect(upward.sort()).toEqual([]);
  });
});
