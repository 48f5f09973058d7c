/**
 * docker-compose.yml: lint-clean under dclint (warnings fail too), and the structure operators rely
 * on: the three services, loopback-only ports, start order, and Postgres settings identical to the
 * ones the test harness runs with (src/database/embedded/pg-cluster.ts), except the harness's
 * speed-only settings, which production must leave at their durable defaults.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';

const ROOT = path.resolve(import.meta.dirname, '../..');
const COMPOSE_FILE = path.join(ROOT, 'docker-compose.yml');
const PG_CLUSTER_SOURCE = path.join(ROOT, 'src/database/embedded/pg-cluster.ts');

/**
 * Harness settings that are deliberately not in the compose file: durability traded for speed
 * (fsync, full_page_writes), test-sized memory, and the harness's own networking and include file.
 */
const HARNESS_ONLY = new Set(['fsync', 'full_page_writes', 'shared_buffers', 'listen_addresses', 'unix_socket_directories', 'include_if_exists']);

interface ComposeService {
  image?: string;
  build?: unknown;
  command?: unknown;
  entrypoint?: unknown;
  depends_on?: Record<string, { condition?: string }> | string[];
  environment?: Record<string, string | number> | string[];
  ports?: Array<string | number | { host_ip?: string; published?: string | number }>;
  volumes?: Array<string | { type?: string; source?: string; target?: string }>;
  healthcheck?: { test?: string | string[] };
}

interface ComposeFile {
  services: Record<string, ComposeService>;
  volumes?: Record<string, unknown>;
}

function runDclint(args: string[]): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile('npx', ['--no', '--', 'dclint', ...args], { cwd: ROOT, timeout: 60_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
      resolve({ code, output: `${stdout}${stderr}` });
    });
  });
}

function loadCompose(): ComposeFile {
  return parse(readFileSync(COMPOSE_FILE, 'utf8'), { merge: true }) as ComposeFile;
}

/** `-c key=value` pairs of a postgres command line. */
function commandSettings(command: unknown): Record<string, string> {
  if (!Array.isArray(command)) throw new Error(`expected an exec-form postgres command, got ${JSON.stringify(command)}`);
  const settings: Record<string, string> = {};
  command.forEach((arg, i) => {
    if (arg !== '-c') return;
    const [key, ...value] = String(command[i + 1]).split('=');
    settings[key.trim()] = value.join('=').trim();
  });
  return settings;
}

/**
 * The postgresql.conf fragment PgCluster appends (its `STATIC_CONF`). Taken from the module when
 * it exports it; until then from the template literal in its source text.
 */
async function harnessConfText(): Promise<string> {
  const mod = (await import('../../src/database/embedded/pg-cluster.js')) as unknown as Record<string, unknown>;
  if (typeof mod.STATIC_CONF === 'string') return mod.STATIC_CONF;
  const source = readFileSync(PG_CLUSTER_SOURCE, 'utf8');
  const match = /const STATIC_CONF = `([^`]*)`/.exec(source);
  if (!match) throw new Error(`STATIC_CONF not found in ${PG_CLUSTER_SOURCE}: update this test's reader`);
  return match[1];
}

function parseConf(text: string): Record<string, string> {
  const settings: Record<string, string> = {};
  for (const raw of text.split('\n')) {
    const line = raw.replace(/#.*$/, '').trim();
    const m = /^([a-z_]+)\s*=\s*(.+)$/.exec(line);
    if (m) settings[m[1]] = m[2].trim().replace(/^'(.*)'$/, '$1');
  }
  return settings;
}

function withoutHarnessOnly(settings: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(settings).filter(([key]) => !HARNESS_ONLY.has(key)));
}

function environmentOf(service: ComposeService): Record<string, string> {
  const env = service.environment ?? {};
  if (Array.isArray(env)) return Object.fromEntries(env.map((kv) => [kv.split('=')[0], kv.split('=').slice(1).join('=')]));
  return Object.fromEntries(Object.entries(env).map(([k, v]) => [k, String(v)]));
}

/** Host IP of a published port, '' when it binds every interface. */
function hostIpOf(port: string | number | { host_ip?: string }): string {
  if (typeof port === 'object') return port.host_ip ?? '';
  const parts = String(port).split(':');
  return parts.length === 3 ? parts[0] : '';
}

describe('docker-compose.yml', () => {
  it('is clean under dclint, warnings included', async () => {
    const result = await runDclint(['docker-compose.yml', '--max-warnings', '0', '--no-color']);
    expect(result).toEqual({ code: 0, output: expect.any(String) });
  });

  const compose = loadCompose();

  it('defines the primary, the replica and the relay', () => {
    expect(Object.keys(compose.services)).toEqual(expect.arrayContaining(['primary', 'replica', 'relay']));
  });

  it('publishes every port on 127.0.0.1 only', () => {
    const published = Object.entries(compose.services).flatMap(([name, s]) => (s.ports ?? []).map((p) => ({ name, port: p, hostIp: hostIpOf(p) })));
    expect(published.length).toBeGreaterThan(0);
    for (const p of published) expect(p).toEqual({ ...p, hostIp: '127.0.0.1' });
  });

  it('starts the relay only once the primary is healthy', () => {
    const dependsOn = compose.services.relay.depends_on;
    expect(Array.isArray(dependsOn)).toBe(false);
    expect((dependsOn as Record<string, { condition?: string }>).primary).toEqual({ condition: 'service_healthy' });
  });

  it('points the relay at the primary (writer) and the replica (reader)', () => {
    const env = environmentOf(compose.services.relay);
    // `${POSTGRES_PASSWORD:?…}` is compose interpolation; stand a plain value in for it.
    const url = (value: string) => new URL(value.replace(/\$\{[^}]*\}/g, 'password'));
    expect(url(env.DATABASE_URL).host).toBe('primary:5432');
    expect(url(env.READ_DATABASE_URL).host).toBe('replica:5432');
  });

  it('has a healthcheck on every service: pg_isready for Postgres, /readyz for the relay', () => {
    const testOf = (name: string) => [compose.services[name].healthcheck?.test ?? []].flat().join(' ');
    expect(testOf('primary')).toContain('pg_isready');
    expect(testOf('replica')).toContain('pg_isready');
    expect(testOf('relay')).toContain('/readyz');
  });

  it('keeps Postgres data in named volumes', () => {
    const declared = Object.keys(compose.volumes ?? {});
    for (const name of ['primary', 'replica']) {
      const data = (compose.services[name].volumes ?? [])
        .map((v) => (typeof v === 'string' ? { source: v.split(':')[0], target: v.split(':')[1] } : v))
        .find((v) => v.target === '/var/lib/postgresql/data');
      expect(data?.source).toBeDefined();
      expect(declared).toContain(data?.source);
    }
  });

  it('runs primary and replica with the harness settings, minus its speed-only ones, fsync on', async () => {
    const harness = parseConf(await harnessConfText());
    const primary = commandSettings(compose.services.primary.command);
    const replica = commandSettings(compose.services.replica.command);
    expect(replica).toEqual(primary);
    expect(primary).toEqual(withoutHarnessOnly(harness));
    // Production keeps the durable defaults the harness turns off for speed.
    expect(primary.fsync ?? 'on').toBe('on');
    expect(primary.full_page_writes ?? 'on').toBe('on');
    expect(harness.fsync).toBe('off'); // if the harness ever turns fsync on, revisit HARNESS_ONLY
  });
});
