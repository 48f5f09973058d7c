/**
 * Refusals live in catalogues (nostr/refusal.ts): a file named `*.refusals.ts` is the one place a
 * feature writes its refusals. Everywhere else under src/ (specs excepted):
 * - no string or template literal starts with a NIP-01 code and its colon (`'invalid: …'`,
 *   `` `restricted: ${…}` ``, `'duplicate:'`): a reason is a catalogue entry, not text;
 * - no `new Refusal(…)`: a refusal is made in its feature's catalogue;
 * - no parseRefusal: the relay never reads a code back out of a reason. Its client library
 *   (src/client) reads the relay's reasons from the wire, so it may.
 * Literals are read with the TypeScript parser, so comments that quote a reason do not count.
 */
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import ts from 'typescript';
import { sourceFilesUnder } from '../test/harness/source-graph.js';
import { REFUSAL_CODES } from './nostr/refusal.js';

const SRC = import.meta.dirname;
const CATALOGUE = /\.refusals\.ts$/;
/** Where the type itself is defined (its parser makes one). */
const REFUSAL_TYPE = 'nostr/refusal.ts';
/** The client library reads reasons from the wire. */
const WIRE_READERS = /^client\//;

const CODED = new RegExp(`^(?:${REFUSAL_CODES.join('|')}):(?: |$)`);

/** The literals of `text` that start with a code and its colon, with their line numbers. */
function codedLiterals(fileName: string, text: string): string[] {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if ((ts.isStringLiteralLike(node) || ts.isTemplateHead(node)) && CODED.test(node.text)) {
      found.push(`${source.getLineAndCharacterOfPosition(node.getStart()).line + 1}: ${node.getText()}`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

const sources = sourceFilesUnder(SRC).map((file) => ({ file: relative(SRC, file), text: readFileSync(file, 'utf8') }));
const outsideCatalogues = sources.filter((s) => !CATALOGUE.test(s.file));

describe('refusals are written in their catalogues', () => {
  it('reads the catalogues, each holding refusals', () => {
    const catalogues = sources.filter((s) => CATALOGUE.test(s.file));
    expect(catalogues.length).toBeGreaterThanOrEqual(10);
    expect(catalogues.filter((c) => !/\bnew Refusal\(/.test(c.text)).map((c) => c.file)).toEqual([]);
  });

  it('finds a coded literal in code and not in a comment (the rule bites)', () => {
    const sample = [
      "// 'invalid: said in a comment'",
      "reject('invalid: bad tag');",
      'send(`restricted: ${why}`);',
      "if (m.startsWith('rate-limited:')) {}",
      "const note = 'invalid tag: x';",
    ].join('\n');
    expect(codedLiterals('sample.ts', sample)).toEqual(["2: 'invalid: bad tag'", '3: `restricted: ${', "4: 'rate-limited:'"]);
  });

  it('leaves no coded literal outside the catalogues', () => {
    const found = outsideCatalogues.flatMap((s) => codedLiterals(s.file, s.text).map((hit) => `${s.file}:${hit}`));
    expect(found).toEqual([]);
  });

  it('makes refusals in the catalogues only', () => {
    const making = outsideCatalogues.filter((s) => s.file !== REFUSAL_TYPE && /\bnew Refusal\(/.test(s.text));
    expect(making.map((s) => s.file)).toEqual([]);
  });

  it('parses no reason on the relay side', () => {
    const parsing = sources.filter((s) => s.file !== REFUSAL_TYPE && !WIRE_READERS.test(s.file) && /\bparseRefusal\b/.test(s.text));
    expect(parsing.map((s) => s.file)).toEqual([]);
  });
});
