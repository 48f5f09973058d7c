/**
 * No production class takes more than eight constructor parameters (issue 31): a class that needs
 * more is doing more than one job, and its collaborators that travel together belong in a smaller
 * service of their own. Every class in a non-spec file under src/ and packages/read-path/src/
 * counts, read with the TypeScript parser (a parameter is a parameter, injected or not).
 */
import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { sourceFilesUnder } from '../test/harness/source-graph.js';

const ROOT = join(import.meta.dirname, '..');
const MAX_PARAMETERS = 8;

interface Constructor {
  readonly where: string;
  readonly parameters: number;
}

/** The constructors declared in `text`, each named `<file>:<class>`. */
function constructorsOf(fileName: string, text: string): Constructor[] {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true);
  const found: Constructor[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isConstructorDeclaration(node) && ts.isClassLike(node.parent)) {
      found.push({ where: `${fileName}:${node.parent.name?.text ?? '(anonymous class)'}`, parameters: node.parameters.length });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

const constructors = ['src', 'packages/read-path/src'].flatMap((dir) =>
  sourceFilesUnder(join(ROOT, dir)).flatMap((file) => constructorsOf(relative(ROOT, file), readFileSync(file, 'utf8'))),
);

describe('constructor parameters', () => {
  it('reads the classes of both trees (sanity: known constructors are there)', () => {
    const where = constructors.map((c) => c.where);
    expect(where).toContain('src/events/ingest.service.ts:IngestService');
    expect(where).toContain('packages/read-path/src/routing/routed-reader.service.ts:RoutedReader');
  });

  it('counts every parameter of a class constructor, injected or not (the rule bites)', () => {
    const sample = [
      'class Wide {',
      '  constructor(a: A, @Inject(B) private readonly b: B, c: C, d: D, e: E, f: F, g: G, h: H, @Optional() i?: I) {}',
      '}',
      'const Inner = class { constructor(x: X) {} };',
      'function notAClass(a: A, b: B, c: C, d: D, e: E, f: F, g: G, h: H, i: I) {}',
    ].join('\n');
    expect(constructorsOf('sample.ts', sample)).toEqual([
      { where: 'sample.ts:Wide', parameters: 9 },
      { where: 'sample.ts:(anonymous class)', parameters: 1 },
    ]);
  });

  it(`are at most ${MAX_PARAMETERS} in every production class`, () => {
    const wide = constructors.filter((c) => c.parameters > MAX_PARAMETERS).map((c) => `${c.where} (${c.parameters})`);
    expect(wide).toEqual([]);
  });
});
