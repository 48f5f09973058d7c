/**
 * Test seams stay out of the shipped code (src/ and packages/read-path/src, specs excepted): no
 * production class keeps a door that only tests and benchmarks use. Tests reach the same states
 * from test/harness (FenceProof, SteppedReplicaFence, readerSaturated,
 * signatureVerifierFromSource), and the spill bench builds its relay from a testing module.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';

const REPO = resolve(import.meta.dirname, '..');
const SHIPPED = ['src', 'packages/read-path/src'];

/** What each seam was, a pattern that finds it again, and a line of it (so the pattern is known to bite). */
const SEAMS: ReadonlyArray<readonly [seam: string, pattern: RegExp, sample: string]> = [
  ['no ProofRing.forceOpen (it opened the fence without a proof)', /\bforceOpen\b/, 'ring.forceOpen(wall);'],
  ['no public ReplicaFenceService.beat() (a beat on demand)', /^\s*(?:public\s+)?(?:async\s+)?beat\s*\(/m, '  async beat(): Promise<ProbeSample | ProbeError> {'],
  ['no DatabaseService.readerSaturated() (a pool state only tests asked for)', /\breaderSaturated\b/, 'readerSaturated(): boolean {'],
  ['no BootstrapOptions.createApp (another way to build the app)', /\bcreateApp\b|\bAppFactory\b/, 'readonly createApp?: AppFactory;'],
  ['no SignatureVerifierOptions.onWorkerStart', /\bonWorkerStart\b/, 'this.options.onWorkerStart?.(worker);'],
  [
    'no run-time TypeScript transpile',
    /\btranspileModule\b|(?:require|import)\s*\(\s*['"]typescript['"]\s*\)|from\s+['"]typescript['"]/,
    "const ts = createRequire(import.meta.url)('typescript') as typeof import('typescript');",
  ],
  ['no eval worker (source run from a string)', /\beval:\s*true\b/, 'new Worker(SOURCE_BOOTSTRAP, { eval: true, workerData });'],
];

function shippedSources(): string[] {
  return SHIPPED.flatMap((dir) =>
    readdirSync(join(REPO, dir), { recursive: true, encoding: 'utf8' })
      .filter((f) => f.endsWith('.ts') && !f.endsWith('.spec.ts'))
      .map((f) => join(REPO, dir, f)),
  );
}

describe('shipped sources carry no test seams', () => {
  const sources = shippedSources().map((file) => ({ file: relative(REPO, file), text: readFileSync(file, 'utf8') }));

  it('reads both trees', () => {
    for (const dir of SHIPPED) expect(sources.filter((s) => s.file.startsWith(`${dir}/`)).length).toBeGreaterThan(20);
  });

  it.each(SEAMS)('%s', (_seam, pattern, sample) => {
    expect(pattern.test(sample)).toBe(true);
    expect(sources.filter((s) => pattern.test(s.text)).map((s) => s.file)).toEqual([]);
  });
});
