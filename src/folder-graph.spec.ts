/**
 * Which folders of src/ import which (docs/architecture.md, "Who imports whom"), as a rule: the
 * folder cycles that exist today are listed below and no other may form. A change that breaks one
 * of them shortens the list; one that makes a new one, or joins two, fails here. Every non-spec
 * file under src/ counts, type-only imports included (they couple the sources all the same).
 */
import { relative, sep } from 'node:path';
import { resolveRelative, sourceFilesUnder, specifiersOf } from '../test/harness/source-graph.js';

const SRC = import.meta.dirname;

/** Today's folder cycles (strongly connected groups), each sorted; the graph rule of issue 31 removes them. */
const KNOWN_CYCLES: string[][] = [];

const folderOf = (file: string) => {
  const parts = relative(SRC, file).split(sep);
  return parts.length > 1 ? parts[0] : '(root)';
};

function folderGraph(): Map<string, Set<string>> {
  const graph = new Map<string, Set<string>>();
  for (const file of sourceFilesUnder(SRC)) {
    const from = folderOf(file);
    const edges = graph.get(from) ?? graph.set(from, new Set()).get(from)!;
    for (const spec of specifiersOf(file)) {
      const target = resolveRelative(file, spec);
      if (target === undefined || !target.startsWith(SRC)) continue;
      const to = folderOf(target);
      if (to !== from) edges.add(to);
    }
  }
  return graph;
}

/** Tarjan's strongly connected components with more than one folder, each sorted. */
function cyclesOf(graph: Map<string, Set<string>>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, index.get(w)!));
      }
    }
    if (low.get(v) !== index.get(v)) return;
    const group: string[] = [];
    for (let w = stack.pop()!; ; w = stack.pop()!) {
      onStack.delete(w);
      group.push(w);
      if (w === v) break;
    }
    if (group.length > 1) found.push(group.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found.sort((a, b) => a[0].localeCompare(b[0]));
}

describe('the folders of src/', () => {
  const graph = folderGraph();

  it('reads the whole tree (sanity: known edges are there)', () => {
    expect(graph.get('events')?.has('nostr')).toBe(true);
    expect(graph.get('bridge')?.has('threads')).toBe(true);
  });

  it('form no folder cycle beyond the ones listed', () => {
    expect(cyclesOf(graph)).toEqual(KNOWN_CYCLES);
  });

  it('keep the protocol layer and the thread overlays out of every cycle', () => {
    const cyclic = new Set(cyclesOf(graph).flat());
    expect(['nostr', 'threads', 'queries', 'bridge', 'auth'].filter((f) => cyclic.has(f))).toEqual([]);
  });
});

