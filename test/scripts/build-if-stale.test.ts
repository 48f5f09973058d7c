/**
 * scripts/build-if-stale.mjs, which `npm start`, `npm run admin` and `npm run seed:long-thread` run
 * first: on a small project of its own (a copy of the script, a tsconfig, two sources, the real
 * TypeScript), it builds when there is no build, does nothing when nothing changed, and rebuilds
 * after an edit, a new file or a deleted one. Outcomes are read from dist/ and from what the
 * script says, never from how long it took.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, unlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const REPO = path.resolve(import.meta.dirname, '../..');
let root: string;

beforeAll(() => {
  root = mkdtempSync(path.join(tmpdir(), 'buzz-build-if-stale-'));
  mkdirSync(path.join(root, 'scripts'));
  mkdirSync(path.join(root, 'src'));
  copyFileSync(path.join(REPO, 'scripts/build-if-stale.mjs'), path.join(root, 'scripts/build-if-stale.mjs'));
  symlinkSync(path.join(REPO, 'node_modules'), path.join(root, 'node_modules'));
  writeFileSync(path.join(root, 'package.json'), '{"type":"module"}\n');
  writeFileSync(path.join(root, 'tsconfig.json'), JSON.stringify({ compilerOptions: { module: 'nodenext', target: 'ES2022', outDir: './dist', rootDir: '.', strict: true, types: [] } }));
  writeFileSync(path.join(root, 'tsconfig.build.json'), JSON.stringify({ extends: './tsconfig.json', include: ['src/**/*.ts'] }));
  writeFileSync(path.join(root, 'src/a.ts'), 'export const a: number = 1;\n');
  writeFileSync(path.join(root, 'src/b.ts'), 'export const b: number = 2;\n');
});

afterAll(() => rmSync(root, { recursive: true, force: true }));

/** Runs the script; `built` when it said it was building. */
function run(...args: string[]): { status: number | null; built: boolean; out: string } {
  const r = spawnSync(process.execPath, [path.join(root, 'scripts/build-if-stale.mjs'), ...args], { cwd: root, encoding: 'utf8' });
  return { status: r.status, built: r.stderr.includes('building dist/'), out: r.stdout + r.stderr };
}

/** Moves the stamp into the past, so a later edit is newer even on a coarse-grained clock. */
function ageStamp(): void {
  const past = new Date(Date.now() - 60_000);
  utimesSync(path.join(root, 'dist/.build-stamp'), past, past);
}

describe('build-if-stale', () => {
  it('builds when there is no build, then leaves a current build alone', () => {
    expect(run('--check')).toMatchObject({ status: 1, out: 'no build yet\n' });
    expect(run()).toMatchObject({ status: 0, built: true });
    expect(readFileSync(path.join(root, 'dist/src/a.js'), 'utf8')).toContain('export const a = 1;');
    expect(run()).toMatchObject({ status: 0, built: false });
    expect(run('--check')).toMatchObject({ status: 0, out: 'dist/ is current\n' });
  });

  it('rebuilds after an edit, and names what changed', () => {
    ageStamp();
    writeFileSync(path.join(root, 'src/a.ts'), 'export const a: number = 10;\n');
    expect(run('--check')).toMatchObject({ status: 1, out: 'src/a.ts changed since the last build\n' });
    expect(run()).toMatchObject({ status: 0, built: true });
    expect(readFileSync(path.join(root, 'dist/src/a.js'), 'utf8')).toContain('export const a = 10;');
    expect(run()).toMatchObject({ built: false });
  });

  it('rebuilds after a file was added or deleted (its directory changed), and after a tsconfig change', () => {
    ageStamp();
    writeFileSync(path.join(root, 'src/c.ts'), 'export const c: number = 3;\n');
    expect(run()).toMatchObject({ status: 0, built: true });
    expect(existsSync(path.join(root, 'dist/src/c.js'))).toBe(true);
    ageStamp();
    unlinkSync(path.join(root, 'src/b.ts'));
    expect(run('--check')).toMatchObject({ status: 1, out: 'src changed since the last build\n' });
    ageStamp();
    writeFileSync(path.join(root, 'tsconfig.build.json'), JSON.stringify({ extends: './tsconfig.json', include: ['src/**/*.ts'], compilerOptions: { sourceMap: true } }));
    expect(run('--check')).toMatchObject({ status: 1, out: 'tsconfig.build.json changed since the last build\n' });
  });

  it('fails, with tsc saying why, when the sources do not compile; the next start tries again', () => {
    ageStamp();
    writeFileSync(path.join(root, 'src/a.ts'), 'export const a: number = "not a number";\n');
    const failed = run();
    expect(failed.status).not.toBe(0);
    expect(failed.out).toContain('TS2322');
    expect(run('--check').status).toBe(1);
  });
});
