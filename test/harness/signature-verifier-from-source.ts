/**
 * SignatureVerifier for unit specs under ts-jest, where there is no compiled
 * `signature.worker.js`: each pool worker runs `src/events/signature.worker.ts` transpiled to
 * CommonJS with the `typescript` package, as an `eval` worker whose `require` is rooted at the
 * source file. That works because the worker file is self-contained (see its header).
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { SignatureVerifier, type SignatureVerifierOptions } from '../../src/events/signature-verifier.js';
import type { SignatureWorkerData } from '../../src/events/signature.worker.js';

const WORKER_SOURCE = fileURLToPath(new URL('../../src/events/signature.worker.ts', import.meta.url));

/** Eval-worker bootstrap (CommonJS) that runs the transpiled worker source. */
const SOURCE_BOOTSTRAP = `
const { workerData } = require('node:worker_threads');
const { createRequire } = require('node:module');
const path = require('node:path');
const mod = { exports: {} };
const run = new Function('exports', 'require', 'module', '__filename', '__dirname', workerData.source);
run(mod.exports, createRequire(workerData.filename), mod, workerData.filename, path.dirname(workerData.filename));
`;

let transpiled: string | undefined;

/** The worker file as CommonJS, compiled once per test file. */
function workerSource(): string {
  const ts = createRequire(import.meta.url)('typescript') as typeof import('typescript');
  transpiled ??= ts.transpileModule(readFileSync(WORKER_SOURCE, 'utf8'), {
    fileName: WORKER_SOURCE,
    compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, esModuleInterop: true },
  }).outputText;
  return transpiled;
}

/** A pool whose workers run from source; `onWorkerStart` sees each worker as it is started. */
export function signatureVerifierFromSource(options: SignatureVerifierOptions = {}, onWorkerStart: (worker: Worker) => void = () => undefined): SignatureVerifier {
  class FromSource extends SignatureVerifier {
    protected override spawnWorker(workerData: SignatureWorkerData): Worker {
      const worker = new Worker(SOURCE_BOOTSTRAP, { eval: true, workerData: { ...workerData, filename: WORKER_SOURCE, source: workerSource() } });
      onWorkerStart(worker);
      return worker;
    }
  }
  return new FromSource(options);
}
