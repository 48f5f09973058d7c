/**
 * No feature module is `@Global()`: a module that needs a feature's provider imports the feature's
 * module, so the import says who depends on whom (and folder-graph.spec.ts can check it). Two
 * infrastructure modules stay global, each with its reason below.
 */
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { sourceFilesUnder } from '../test/harness/source-graph.js';

const SRC = import.meta.dirname;

const GLOBAL_ALLOWED: ReadonlyMap<string, string> = new Map([
  ['config/config.module.ts', 'the validated configuration: every module reads it, as it would read process.env'],
  ['metrics/metrics.module.ts', 'the Prometheus registry: every module records into the one registry'],
]);

const globalModules = () =>
  sourceFilesUnder(SRC)
    .filter((file) => /^\s*@Global\(\)/m.test(readFileSync(file, 'utf8')))
    .map((file) => relative(SRC, file))
    .sort();

describe('global modules', () => {
  it('are only the infrastructure listed', () => {
    expect(globalModules()).toEqual([...GLOBAL_ALLOWED.keys()].sort());
  });
});
