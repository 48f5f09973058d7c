/**
 * A source file longer than 350 lines says why in its header (issue 31's rule for a reviewable
 * tree): a comment before its first declaration with a line starting `Over 350 lines:`. Spec
 * files are exempt. Covers src/ and the read-path package.
 */
import { readFileSync } from 'node:fs';
import { relative, resolve } from 'node:path';
import { sourceFilesUnder } from '../test/harness/source-graph.js';

const SRC = import.meta.dirname;
const ROOT = resolve(SRC, '..');
const LIMIT = 350;
const REASON = /^\s*\*\s*Over 350 lines: \S/m;

/** The comments at the top of a file, up to its first line of code. */
function header(text: string): string {
  const lines = text.split('\n');
  const out: string[] = [];
  let inComment = false;
  for (const line of lines) {
    const t = line.trim();
    if (inComment || t.startsWith('/*') || t.startsWith('//') || t === '' || t.startsWith('*')) {
      out.push(line);
      if (t.startsWith('/*')) inComment = !t.includes('*/');
      else if (inComment && t.includes('*/')) inComment = false;
      continue;
    }
    if (t.startsWith('import ')) continue;
    break;
  }
  return out.join('\n');
}

function longWithoutReason(dir: string): string[] {
  return sourceFilesUnder(dir)
    .filter((file) => !file.endsWith('.spec.ts'))
    .map((file) => ({ file, text: readFileSync(file, 'utf8') }))
    .filter(({ text }) => text.split('\n').length > LIMIT && !REASON.test(header(text)))
    .map(({ file }) => relative(ROOT, file));
}

describe('files over 350 lines', () => {
  it('say why in their header', () => {
    expect([...longWithoutReason(SRC), ...longWithoutReason(resolve(ROOT, 'packages/read-path/src'))]).toEqual([]);
  });

  it('finds the reason only in the header', () => {
    expect(REASON.test(header('/**\n * Over 350 lines: one table.\n */\nimport x from "y";\nexport const a = 1;\n'))).toBe(true);
    expect(REASON.test(header('export const a = 1;\n/**\n * Over 350 lines: too late.\n */\n'))).toBe(false);
  });
});
