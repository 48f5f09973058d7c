/**
 * Every `§` citation in the project resolves to a section of a spec in the repository
 * (docs/spec/README.md gives the rule): `relay.md §2.8` and `database.md §3.4` name their file; a
 * bare `§` on a line that named one earlier refers to it, otherwise to `database.md` under
 * packages/ and to `relay.md` everywhere else. A section resolves when the spec has a heading with
 * its number. Citations of outside documents (`RFC 9562 §5.5`, the Postgres `protocol §53`) are
 * not the project's specs and are skipped.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '..');
const SPECS = ['relay.md', 'database.md'] as const;
type Spec = (typeof SPECS)[number];
const ROOTS = ['src', 'packages/read-path/src', 'packages/read-path/migrations', 'packages/read-path/README.md', 'docs', 'bench', 'scripts', 'test', 'README.md'];
const CITATION = /(relay\.md|database\.md)|§ ?(\d+(?:\.\d+)*[a-z]?)/g;
const OUTSIDE = /(?:RFC \d+|protocol) $/;

function sectionsOf(spec: Spec): Set<string> {
  const text = readFileSync(join(ROOT, 'docs/spec', spec), 'utf8');
  return new Set([...text.matchAll(/^#{2,5} (\d+(?:\.\d+)*[a-z]?)\.?\s/gm)].map((m) => m[1]));
}

function filesUnder(path: string): string[] {
  const full = join(ROOT, path);
  if (/\.(ts|md)$/.test(path)) return [full];
  return readdirSync(full, { recursive: true, encoding: 'utf8' })
    .filter((f) => /\.(ts|md)$/.test(f) && !f.includes('node_modules'))
    .map((f) => join(full, f))
    .filter((f) => !relative(ROOT, f).startsWith('docs/spec/'));
}

/** `file:line: spec §n` for each citation in `text` whose section the spec lacks. */
export function unresolved(file: string, text: string, sections: Record<Spec, Set<string>>): string[] {
  const fallback: Spec = file.startsWith('packages/') ? 'database.md' : 'relay.md';
  const out: string[] = [];
  text.split('\n').forEach((line, i) => {
    let named: Spec | undefined;
    for (const m of line.matchAll(CITATION)) {
      if (m[1] !== undefined) {
        named = m[1] as Spec;
        continue;
      }
      if (OUTSIDE.test(line.slice(0, m.index))) continue;
      const spec = named ?? fallback;
      if (!sections[spec].has(m[2])) out.push(`${file}:${i + 1}: ${spec} §${m[2]}`);
    }
  });
  return out;
}

describe('§ citations', () => {
  const sections = { 'relay.md': sectionsOf('relay.md'), 'database.md': sectionsOf('database.md') };

  it('read the specs (sanity: known sections are there)', () => {
    expect(sections['relay.md'].has('2.7b')).toBe(true);
    expect(sections['database.md'].has('6.6')).toBe(true);
  });

  it('resolve, by the rule above, to a section heading of docs/spec/', () => {
    // This file's own examples (below) cite on purpose what does not resolve.
    const files = ROOTS.flatMap(filesUnder).filter((f) => f !== import.meta.filename);
    expect(files.length).toBeGreaterThan(300);
    const bad = files.flatMap((f) => unresolved(relative(ROOT, f), readFileSync(f, 'utf8'), sections));
    expect(bad).toEqual([]);
  });

  it('a bare § takes the file named before it on the line, else the folder default', () => {
    const s = { 'relay.md': new Set(['2.8']), 'database.md': new Set(['6.6']) };
    expect(unresolved('src/a.ts', 'see §2.8 and database.md §6.6', s)).toEqual([]);
    expect(unresolved('src/a.ts', 'see §6.6', s)).toEqual(['src/a.ts:1: relay.md §6.6']);
    expect(unresolved('packages/read-path/src/a.ts', 'see §6.6, RFC 9562 §5.5', s)).toEqual([]);
  });
});
