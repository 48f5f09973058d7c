/**
 * The protocol layer stands alone: nothing under `src/nostr/` imports anything outside it but
 * Node built-ins (no Nest, no database, no config), so any layer may import it and it can be
 * read, tested and reused without the relay. Read from the import statements, in the manner of
 * `packages/read-path/src/index.spec.ts`.
 */
import { builtinModules } from 'node:module';
import { readFileSync } from 'node:fs';
import { dirname, relative, resolve } from 'node:path';
import { sourceFilesUnder, specifiersOf } from '../../test/harness/source-graph.js';

const NOSTR = import.meta.dirname;
const SRC = resolve(NOSTR, '..');

/**
 * Packages a protocol file may import besides Node built-ins, each with the reason. Empty: the
 * signature check, which needs secp256k1 and worker threads, stays in `events/`.
 */
const ALLOWED_PACKAGES: ReadonlyMap<string, string> = new Map();

/** The non-test TypeScript files of the layer. */
const layerSources = () => sourceFilesUnder(NOSTR);

/** A specifier that leaves the layer: a relative path outside `src/nostr/`, or a package not allowed. */
function leavesLayer(file: string, spec: string): boolean {
  if (spec.startsWith('.')) return !resolve(dirname(file), spec).startsWith(NOSTR + '/');
  if (spec.startsWith('node:') || builtinModules.includes(spec)) return false;
  const name = spec.split('/').slice(0, spec.startsWith('@') ? 2 : 1).join('/');
  return !ALLOWED_PACKAGES.has(name);
}

describe('src/nostr: import graph', () => {
  it('holds the protocol code (so the rule below is not met by an empty folder)', () => {
    const files = layerSources().map((f) => relative(SRC, f));
    for (const expected of ['kinds', 'event-id', 'event-validation', 'filter', 'client-message', 'hex', 'group-id', 'refusal', 'event.refusals']) {
      expect(files).toContain(`nostr/${expected}.ts`);
    }
  });

  it('imports nothing outside src/nostr/ but Node built-ins', () => {
    const leaving = layerSources().flatMap((file) =>
      specifiersOf(file)
        .filter((spec) => leavesLayer(file, spec))
        .map((spec) => `${relative(SRC, file)}: ${spec}`),
    );
    expect(leaving).toEqual([]);
  });

  it('reads no configuration', () => {
    const reading = layerSources().filter((file) => /\bprocess\.env\b/.test(readFileSync(file, 'utf8')));
    expect(reading.map((f) => relative(SRC, f))).toEqual([]);
  });
});
