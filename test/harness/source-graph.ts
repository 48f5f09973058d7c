/**
 * The import graph of TypeScript sources, read from the text: the non-spec files under a folder,
 * the specifiers each imports (static, `export … from`, dynamic), and relative ones resolved to
 * files. For the specs that hold a layering rule (src/folder-graph.spec.ts, src/nostr/nostr-layer.spec.ts).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

/** The `.ts` files under `dir`, specs left out. */
export function sourceFilesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts') && !f.endsWith('.spec.ts'))
    .map((f) => join(dir, f));
}

/** Every specifier `file` imports or re-exports, type-only and dynamic imports included. */
export function specifiersOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(/(?:from\s+|import\s*\(\s*|import\s+)['"]([^'"]+)['"]/g)].map((m) => m[1]);
}

/** A relative specifier as the file it names (`.js` written for `.ts`), or undefined for a package. */
export function resolveRelative(file: string, specifier: string): string | undefined {
  if (!specifier.startsWith('.')) return undefined;
  const base = resolve(dirname(file), specifier);
  return [base.replace(/\.js$/, '.ts'), `${base}.ts`, join(base, 'index.ts')].find((f) => existsSync(f));
}
