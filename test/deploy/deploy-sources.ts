/**
 * What the deployment files and docs/operator.md are checked against: the relay's own source.
 * Environment variables come from running the config loader on a recording environment plus a
 * scan of src/ (for reads behind a branch the empty environment does not take); metric families
 * from a scan of src/ for the registered names. Small readers for the files under deploy/ too.
 */
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import { loadConfig } from '../../src/config/app-config.js';

export const ROOT = path.resolve(import.meta.dirname, '../..');
export const OPERATOR_DOC = path.join(ROOT, 'docs/operator.md');

export function readText(relative: string): string {
  return readFileSync(path.join(ROOT, relative), 'utf8');
}

export function readYaml<T>(relative: string): T {
  return parse(readText(relative), { merge: true }) as T;
}

/** Every document of a (possibly multi-document) YAML file; a syntax error throws. */
export function readYamlDocuments<T>(relative: string): T[] {
  return parseAllDocuments(readText(relative)).map((doc) => {
    if (doc.errors.length > 0) throw new Error(`${relative}: ${doc.errors.map((e) => e.message).join('; ')}`);
    return doc.toJS() as T;
  });
}

/** The TypeScript source files the relay runs (src/ and the read-path package's src/), specs excluded. */
export function sourceFiles(): string[] {
  return [path.join(ROOT, 'src'), path.join(ROOT, 'packages/read-path/src')].flatMap(tsFilesUnder);
}

function tsFilesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return tsFilesUnder(full);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.spec.ts') ? [full] : [];
  });
}

function matchesIn(files: readonly string[], pattern: RegExp): Set<string> {
  const found = new Set<string>();
  for (const file of files) for (const m of readFileSync(file, 'utf8').matchAll(pattern)) found.add(m[1]);
  return found;
}

/**
 * Every environment variable the relay reads: the names loadConfig asks a recording environment
 * for, the names passed to EnvReader in src/config, and `process.env.NAME` anywhere in src/.
 */
export function relayEnvVarNames(): Set<string> {
  const asked = new Set<string>();
  const recorder = new Proxy({} as NodeJS.ProcessEnv, {
    get: (_target, name) => {
      if (typeof name === 'string') asked.add(name);
      return undefined;
    },
  });
  loadConfig(recorder);
  const files = sourceFiles();
  const configFiles = files.filter((f) => f.includes(`${path.sep}config${path.sep}`));
  const viaReader = matchesIn(configFiles, /\br\.\w+\(\s*'([A-Z][A-Z0-9_]*)'/g);
  const direct = matchesIn(files, /process\.env(?:\.|\[\s*')([A-Z][A-Z0-9_]*)/g);
  return new Set([...asked, ...viaReader, ...direct].filter((n) => /^[A-Z][A-Z0-9_]*$/.test(n)));
}

/** `buzz_*` and `http_*` metric family names given as `name: '…'` to a prom-client constructor in src/. */
export function sourceMetricFamilies(): Set<string> {
  return matchesIn(sourceFiles(), /\bname:\s*'((?:buzz|http)_[a-z0-9_]+)'/g);
}

/** A numeric `const NAME = 10_000;` from a source file (underscores allowed). */
export function sourceConstant(relative: string, name: string): number {
  const value = optionalSourceConstant(relative, name);
  if (value === undefined) throw new Error(`${name} not found in ${relative}: update this test's reader`);
  return value;
}

/** Like sourceConstant, undefined when the file or the constant does not exist. */
function optionalSourceConstant(relative: string, name: string): number | undefined {
  if (!existsSync(path.join(ROOT, relative))) return undefined;
  const m = new RegExp(`const ${name}\\s*=\\s*([\\d_]+)\\s*;`).exec(readText(relative));
  return m ? Number(m[1].replace(/_/g, '')) : undefined;
}

/** Finds a numeric config field by name anywhere in the default configuration (0 when absent). */
function defaultConfigNumber(field: string): number {
  const visit = (value: unknown): number | undefined => {
    if (!value || typeof value !== 'object') return undefined;
    for (const [key, child] of Object.entries(value)) {
      if (key === field && typeof child === 'number') return child;
      const found = visit(child);
      if (found !== undefined) return found;
    }
    return undefined;
  };
  return visit(loadConfig({})) ?? 0;
}

/**
 * Longest orderly shutdown after SIGTERM, in ms, every phase at its bound (a conservative sum):
 * in-flight EVENT/REQ/COUNT drain (`shutdownDrainMs`) and the close handshake
 * (src/graceful-shutdown.ts, where present), the event writer's drain, and an HTTP
 * request's reader transaction running to its deadline.
 */
export function shutdownBudgetMs(): number {
  return (
    defaultConfigNumber('shutdownDrainMs') +
    (optionalSourceConstant('src/graceful-shutdown.ts', 'CLOSE_HANDSHAKE_MS') ?? 0) +
    sourceConstant('src/events/event-writer.service.ts', 'DRAIN_TIMEOUT_MS') +
    sourceConstant('packages/read-path/src/database/pools.ts', 'READER_STATEMENT_TIMEOUT_MS')
  );
}

/** The text of one `## heading` section of a markdown file, up to the next `## `. */
export function markdownSection(markdown: string, heading: string): string {
  const start = markdown.indexOf(`\n## ${heading}\n`);
  if (start < 0) throw new Error(`section "## ${heading}" not found`);
  const next = markdown.indexOf('\n## ', start + 1);
  return markdown.slice(start, next < 0 ? undefined : next);
}

/** First-column cells of markdown table rows that start with a backticked name: name → row. */
export function tableRowsByName(markdown: string, namePattern: RegExp): Map<string, string> {
  const rows = new Map<string, string>();
  for (const line of markdown.split('\n')) {
    const m = /^\|\s*`([^`]+)`\s*\|/.exec(line);
    if (m && namePattern.test(m[1])) rows.set(m[1], line);
  }
  return rows;
}

/** GitHub-style anchors of every heading in a markdown file. */
export function markdownAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>();
  for (const m of markdown.matchAll(/^#{1,6} (.+)$/gm)) {
    anchors.add(
      m[1]
        .trim()
        .toLowerCase()
        .replace(/[^a-z0-9 _-]/g, '')
        .replace(/ /g, '-'),
    );
  }
  return anchors;
}

export interface ToolRun {
  /** undefined when the tool is not installed. */
  readonly code: number | undefined;
  readonly output: string;
}

/** Runs a command-line tool; `code` is undefined when it is not on PATH. */
export function runTool(command: string, args: readonly string[], timeoutMs = 60_000): Promise<ToolRun> {
  return new Promise((resolve) => {
    execFile(command, [...args], { cwd: ROOT, timeout: timeoutMs }, (err, stdout, stderr) => {
      const output = `${stdout}${stderr}`;
      if (err && (err as NodeJS.ErrnoException).code === 'ENOENT') return resolve({ code: undefined, output });
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, output });
    });
  });
}

/** Synchronous PATH lookup, so suites can choose `it` or `it.skip` while being defined. */
export function onPath(command: string): boolean {
  return (process.env.PATH ?? '').split(path.delimiter).some((dir) => {
    try {
      return readdirSync(dir).includes(command);
    } catch {
      return false;
    }
  });
}

/**
 * `it` when `command` is on PATH. Otherwise `it.skip` on a developer machine, but a failing test
 * under CI=true: .ci/run installs the tool there, so a missing one is a broken CI, not a skip.
 */
export function itWithTool(command: string): (name: string, fn: () => Promise<void>, timeout?: number) => void {
  if (onPath(command)) return it;
  if (process.env.CI === 'true') {
    return (name, _fn, timeout) =>
      it(
        name,
        () => {
          throw new Error(`${command} is not on PATH under CI=true: .ci/run should have installed it`);
        },
        timeout,
      );
  }
  return it.skip;
}
