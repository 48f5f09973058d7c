/**
 * docker-compose.yml and the files it mounts (deploy/compose/haproxy.cfg, prometheus.yml, the alert
 * rules), checked without a Docker engine: dclint with warnings as errors, then the structure
 * operators rely on. Two relay pods behind one load-balancer port, each on Redis and on the
 * primary/replica pair; Prometheus scraping each pod; loopback-only ports; start order; Postgres
 * settings identical to the test harness's (src/database/embedded/pg-bring-up.ts) except its
 * speed-only ones, which production must leave at their durable defaults. `haproxy -c` validates
 * its config where haproxy is installed; `promtool` validates prometheus.yml and the rules (required
 * under CI=true, which installs it).
 */
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { stringify } from 'yaml';
import { loadConfig } from '../../src/config/app-config.js';
import { STATIC_CONF } from '../../src/database/embedded/pg-bring-up.js';
import { readBudgetWarning } from '../../packages/read-path/src/replica-fence/replica-fence.constants.js';
import { itWithTool, onPath, readText, readYaml, relayEnvVarNames, ROOT, runTool, shutdownBudgetMs } from '../deploy/deploy-sources.js';

const HAPROXY_CFG = 'deploy/compose/haproxy.cfg';
const PROMETHEUS_CFG = 'deploy/compose/prometheus.yml';
const REDIS_URL = 'redis://redis:6379';
const GRAFANA_PROVISIONING = '/etc/grafana/provisioning';
const GRAFANA_DASHBOARDS = 'deploy/grafana/dashboards';

/**
 * Harness settings that are deliberately not in the compose file: durability traded for speed
 * (fsync, full_page_writes), test-sized memory, and the harness's own networking and include file.
 */
const HARNESS_ONLY = new Set(['fsync', 'full_page_writes', 'shared_buffers', 'listen_addresses', 'unix_socket_directories', 'include_if_exists']);

type Port = string | number | { target?: number; host_ip?: string; published?: string | number };

interface ComposeService {
  image?: string;
  build?: unknown;
  command?: unknown;
  entrypoint?: unknown;
  depends_on?: Record<string, { condition?: string }> | string[];
  environment?: Record<string, string | number> | string[];
  ports?: Port[];
  volumes?: Array<string | { type?: string; source?: string; target?: string }>;
  healthcheck?: { test?: string | string[] };
  stop_grace_period?: string;
}

interface ComposeFile {
  services: Record<string, ComposeService>;
  volumes?: Record<string, unknown>;
}

interface GrafanaDatasources {
  datasources?: Array<{ type: string; url: string; isDefault?: boolean }>;
}

interface GrafanaProviders {
  providers?: Array<{ type: string; options: { path: string } }>;
}

interface GrafanaDashboard {
  uid: string;
  templating: { list: Array<Record<string, unknown>> };
}

interface PrometheusConfig {
  rule_files?: string[];
  scrape_configs: Array<{ job_name: string; metrics_path?: string; static_configs: Array<{ targets: string[] }> }>;
}

const loadCompose = (): ComposeFile => readYaml<ComposeFile>('docker-compose.yml');

const dclint = (file: string, ...options: string[]) => runTool('npx', ['--no', '--', 'dclint', file, '--max-warnings', '0', '--no-color', ...options]);

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

/** Host IP, published (host) port and container port of a ports entry ('' host IP = every interface). */
function portOf(port: Port): { hostIp: string; published: number; target: number } {
  if (typeof port === 'object') return { hostIp: port.host_ip ?? '', published: Number(port.published), target: Number(port.target) };
  const parts = String(port).split(':');
  const [hostIp, published, target] = parts.length === 3 ? parts : ['', parts[0], parts[parts.length - 1]];
  return { hostIp, published: Number(published), target: Number(target) };
}

/** The relay's effective port from its environment, as loadConfig decides it (PORT wins). */
function relayPortOf(env: Record<string, string>): number {
  if (env.PORT !== undefined) return Number(env.PORT);
  return Number(/:(\d+)$/.exec(env.BUZZ_BIND_ADDR ?? '0.0.0.0:3000')![1]);
}

/** Where the relay serves /metrics, as loadConfig decides it: its operator listener. */
function metricsAddressOf(env: Record<string, string>): { host: string; port: number } {
  return loadConfig({ BUZZ_METRICS_HOST: env.BUZZ_METRICS_HOST, BUZZ_METRICS_PORT: env.BUZZ_METRICS_PORT }).metrics;
}

/** Whom the pod's HTTP bridge believes on `X-Pubkey`, as loadConfig decides it. */
function xPubkeyTrustOf(env: Record<string, string>): string {
  return loadConfig({ DATABASE_URL: interpolated(env.DATABASE_URL), BUZZ_REQUIRE_AUTH_TOKEN: env.BUZZ_REQUIRE_AUTH_TOKEN }).xPubkeyTrust;
}

/** `${VAR:?…}` and `${VAR}` compose interpolation replaced by a plain stand-in. */
const interpolated = (value: string) => value.replace(/\$\{[^}]*\}/g, 'password');

/** Services that run the relay: the ones given a writer URL. */
function relayServices(compose: ComposeFile): string[] {
  return Object.keys(compose.services).filter((name) => environmentOf(compose.services[name]).DATABASE_URL !== undefined);
}

function dependsOn(service: ComposeService): Record<string, { condition?: string }> {
  if (Array.isArray(service.depends_on)) throw new Error('depends_on must be the long form with conditions');
  return service.depends_on ?? {};
}

function healthcheckText(service: ComposeService): string {
  return [service.healthcheck?.test ?? []].flat().join(' ');
}

/** Seconds of a compose duration such as `40s`, `1m30s`. */
function durationSeconds(value: string): number {
  let total = 0;
  for (const m of value.matchAll(/(\d+)(h|m|s)/g)) total += Number(m[1]) * { h: 3600, m: 60, s: 1 }[m[2] as 'h' | 'm' | 's'];
  return total;
}

/** haproxy.cfg sections ("frontend relay", "backend relays", …) → their directive lines. */
function haproxySections(text: string): Map<string, string[]> {
  const sections = new Map<string, string[]>();
  let current: string[] | undefined;
  for (const raw of text.split('\n')) {
    const line = raw.replace(/#.*$/, '').trimEnd();
    if (line.trim() === '') continue;
    if (/^\S/.test(line)) {
      current = [];
      sections.set(line.trim().replace(/\s+/g, ' '), current);
    } else current?.push(line.trim().replace(/\s+/g, ' '));
  }
  return sections;
}

/** Every `datasource` reference in a dashboard (panels, targets, variables). */
function datasourceRefs(node: unknown): unknown[] {
  if (Array.isArray(node)) return node.flatMap(datasourceRefs);
  if (!node || typeof node !== 'object') return [];
  return Object.entries(node).flatMap(([key, value]) => (key === 'datasource' ? [value] : datasourceRefs(value)));
}

/** The host path (`./…`) a service mounts at `target`. */
function mountedAt(service: ComposeService, target: string): string {
  const mount = bindMounts(service).find((m) => m.target === target);
  if (!mount) throw new Error(`nothing is mounted at ${target}`);
  return mount.source;
}

/** Bind-mounted host paths (`./…`) of a service. */
function bindMounts(service: ComposeService): Array<{ source: string; target: string }> {
  return (service.volumes ?? [])
    .map((v) => (typeof v === 'string' ? { source: v.split(':')[0], target: v.split(':')[1] } : { source: v.source ?? '', target: v.target ?? '' }))
    .filter((v) => v.source.startsWith('./'));
}

describe('docker-compose.yml', () => {
  it('is clean under dclint, warnings included', async () => {
    expect(await dclint('docker-compose.yml')).toEqual({ code: 0, output: expect.any(String) });
  });

  it('is clean under dclint with the relay anchor expanded (dclint does not follow merge keys)', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'buzz-compose-'));
    try {
      const expanded = path.join(dir, 'docker-compose.yml');
      writeFileSync(expanded, stringify(loadCompose()));
      // Re-serialising drops the quotes around ports; the original file is checked for them above.
      expect(await dclint(expanded, '--disable-rule', 'require-quotes-in-ports')).toEqual({ code: 0, output: expect.any(String) });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  const compose = loadCompose();
  const relays = relayServices(compose);
  const haproxy = haproxySections(readText(HAPROXY_CFG));

  it('routes history reads to the replica on every relay pod: a read budget at or above the fence minimum', () => {
    for (const name of relays) {
      const env = environmentOf(compose.services[name]);
      const fence = Object.fromEntries(['BUZZ_REPLICA_READ_MAX_AGE_MS', 'BUZZ_REPLICA_FENCE_PROBE_INTERVAL_MS'].filter((k) => env[k] !== undefined).map((k) => [k, env[k]]));
      const config = loadConfig(fence);
      expect({ name, budget: config.replica.readMaxAgeMs > 0 }).toEqual({ name, budget: true });
      expect(readBudgetWarning(config.replica.readMaxAgeMs, config.replica.probeIntervalMs, true)).toBeUndefined();
    }
  });

  it('defines the Postgres pair, Redis, two relay pods, the load balancer, Prometheus and Grafana', () => {
    expect(Object.keys(compose.services)).toEqual(expect.arrayContaining(['primary', 'replica', 'redis', 'lb', 'prometheus', 'grafana']));
    expect(relays).toEqual(['relay-a', 'relay-b']);
    for (const name of relays) expect(compose.services[name].build).toBeDefined();
  });

  it('publishes only the load balancer, Prometheus and Grafana, on 127.0.0.1 only', () => {
    const published = Object.entries(compose.services).flatMap(([name, s]) => (s.ports ?? []).map((p) => ({ name, ...portOf(p) })));
    expect(published.map((p) => p.name).sort()).toEqual(['grafana', 'lb', 'prometheus']);
    for (const p of published) expect(p).toEqual({ ...p, hostIp: '127.0.0.1' });
  });

  it('puts both relay pods behind the one load-balancer port, on the port each relay listens on', () => {
    const [lbPort] = (compose.services.lb.ports ?? []).map(portOf);
    const frontends = [...haproxy.entries()].filter(([name]) => name.startsWith('frontend '));
    const relayFrontend = frontends.find(([, lines]) => lines.includes(`bind :${lbPort.target}`));
    expect(relayFrontend).toBeDefined();
    const backendName = relayFrontend![1].find((l) => l.startsWith('default_backend '))!.split(' ')[1];
    const servers = haproxy
      .get(`backend ${backendName}`)!
      .filter((l) => l.startsWith('server '))
      .map((l) => l.split(' ')[2]);
    expect(servers.sort()).toEqual(relays.map((name) => `${name}:${relayPortOf(environmentOf(compose.services[name]))}`).sort());
  });

  it('health-checks every pod on /readyz at the load balancer and keeps WebSockets open', () => {
    const backend = [...haproxy.entries()].find(([name]) => name.startsWith('backend '))![1];
    expect(backend).toContain('option httpchk');
    expect(backend.find((l) => l.startsWith('http-check send '))).toMatch(/ uri \/readyz( |$)/);
    expect(backend).toContain('http-check expect status 200');
    expect(backend.find((l) => l.startsWith('default-server '))).toMatch(/(^| )check( |$)/);
    const tunnel = haproxy.get('defaults')!.find((l) => l.startsWith('timeout tunnel '));
    // Longer than the relay's 30 s ping, or idle sockets would be cut between pings.
    expect(tunnel).toMatch(/^timeout tunnel \d+m$/);
  });

  it('gives every relay pod the shared Redis, the writer, the replica and one relay identity', () => {
    expect(compose.services.redis.image).toMatch(/^redis:/);
    const envs = relays.map((name) => environmentOf(compose.services[name]));
    for (const env of envs) {
      expect(env.BUZZ_REDIS_URL).toBe(REDIS_URL);
      expect(new URL(interpolated(env.DATABASE_URL)).host).toBe('primary:5432');
      expect(new URL(interpolated(env.READ_DATABASE_URL)).host).toBe('replica:5432');
      expect(env.BUZZ_RELAY_PRIVATE_KEY).toMatch(/^\$\{BUZZ_RELAY_PRIVATE_KEY:\?/);
      expect(env).toEqual(envs[0]);
    }
  });

  it('tells the pods the address clients dial: the load balancer', () => {
    const [lbPort] = (compose.services.lb.ports ?? []).map(portOf);
    for (const name of relays) {
      const relayUrl = new URL(environmentOf(compose.services[name]).RELAY_URL);
      expect({ host: relayUrl.hostname, port: Number(relayUrl.port) }).toEqual({ host: 'localhost', port: lbPort.published });
    }
  });

  it('sets only variables the relay reads', () => {
    const known = relayEnvVarNames();
    for (const name of relays) {
      const unknown = Object.keys(environmentOf(compose.services[name])).filter((key) => !known.has(key));
      expect({ service: name, unknown }).toEqual({ service: name, unknown: [] });
    }
  });

  it('starts in order: primary → replica and Redis → relay pods → load balancer', () => {
    expect(dependsOn(compose.services.replica).primary).toEqual({ condition: 'service_healthy' });
    for (const name of relays) {
      const deps = dependsOn(compose.services[name]);
      expect(deps.primary).toEqual({ condition: 'service_healthy' });
      expect(deps.redis).toEqual({ condition: 'service_healthy' });
      expect(deps.replica).toBeDefined();
      expect(dependsOn(compose.services.lb)[name]).toEqual({ condition: 'service_healthy' });
    }
  });

  it('has a healthcheck on every service: pg_isready, redis-cli ping, /readyz on the relay port', () => {
    for (const name of Object.keys(compose.services)) expect({ name, test: healthcheckText(compose.services[name]) }).toEqual({ name, test: expect.stringMatching(/\S/) });
    expect(healthcheckText(compose.services.primary)).toContain('pg_isready');
    expect(healthcheckText(compose.services.replica)).toContain('pg_isready');
    expect(healthcheckText(compose.services.redis)).toContain('redis-cli ping');
    for (const name of relays) {
      const port = relayPortOf(environmentOf(compose.services[name]));
      expect(healthcheckText(compose.services[name])).toContain(`:${port}/readyz`);
    }
  });

  it('lets a relay pod finish its shutdown before SIGKILL', () => {
    for (const name of relays) {
      expect(durationSeconds(compose.services[name].stop_grace_period ?? '10s')).toBeGreaterThanOrEqual(shutdownBudgetMs() / 1000);
    }
  });

  it("opens each pod's /metrics listener to the compose network, on a port of its own", () => {
    for (const name of relays) {
      const env = environmentOf(compose.services[name]);
      const metrics = metricsAddressOf(env);
      // The default (127.0.0.1) would be unreachable from the Prometheus container.
      expect({ name, host: metrics.host }).toEqual({ name, host: '0.0.0.0' });
      expect(metrics.port).not.toBe(relayPortOf(env));
    }
  });

  it('never trusts the X-Pubkey development header', () => {
    for (const name of relays) {
      const env = environmentOf(compose.services[name]);
      expect(xPubkeyTrustOf(env)).toBe('never');
      // Explicit, not only implied by DATABASE_URL.
      expect(env.BUZZ_REQUIRE_AUTH_TOKEN).toBe('true');
    }
  });

  it('has Prometheus scrape every relay pod directly on its metrics listener, and load the alert rules it mounts', () => {
    const prometheus = readYaml<PrometheusConfig>(PROMETHEUS_CFG);
    const relayJob = prometheus.scrape_configs.find((job) => job.job_name === 'buzz-relay')!;
    expect(relayJob.metrics_path ?? '/metrics').toBe('/metrics');
    const targets = relayJob.static_configs.flatMap((c) => c.targets);
    expect(targets.sort()).toEqual(relays.map((name) => `${name}:${metricsAddressOf(environmentOf(compose.services[name])).port}`).sort());
    const mounted = bindMounts(compose.services.prometheus);
    expect(mounted).toContainEqual({ source: `./${PROMETHEUS_CFG}`, target: '/etc/prometheus/prometheus.yml' });
    for (const ruleFile of prometheus.rule_files ?? []) expect(mounted.map((m) => m.target)).toContain(ruleFile);
  });

  it('has Grafana provision the compose Prometheus as its default datasource, once Prometheus is healthy', () => {
    const grafana = compose.services.grafana;
    expect(dependsOn(grafana).prometheus).toEqual({ condition: 'service_healthy' });
    const dir = mountedAt(grafana, `${GRAFANA_PROVISIONING}/datasources`);
    const sources = readdirSync(path.join(ROOT, dir)).flatMap((f) => readYaml<GrafanaDatasources>(`${dir}/${f}`).datasources ?? []);
    const [prometheusPort] = (compose.services.prometheus.ports ?? []).map(portOf);
    expect(sources).toEqual([expect.objectContaining({ type: 'prometheus', url: `http://prometheus:${prometheusPort.target}`, isDefault: true })]);
  });

  it('has Grafana load every dashboard of deploy/grafana/dashboards, each on the datasource variable', () => {
    const grafana = compose.services.grafana;
    const dir = mountedAt(grafana, `${GRAFANA_PROVISIONING}/dashboards`);
    const providers = readdirSync(path.join(ROOT, dir)).flatMap((f) => readYaml<GrafanaProviders>(`${dir}/${f}`).providers ?? []);
    expect(providers.map((p) => p.type)).toEqual(['file']);
    expect(mountedAt(grafana, providers[0].options.path)).toBe(`./${GRAFANA_DASHBOARDS}`);
    const files = readdirSync(path.join(ROOT, GRAFANA_DASHBOARDS)).filter((f) => f.endsWith('.json'));
    expect(files.length).toBeGreaterThan(0);
    const uids = new Set<string>();
    for (const file of files) {
      const dashboard = JSON.parse(readText(`${GRAFANA_DASHBOARDS}/${file}`)) as GrafanaDashboard;
      uids.add(dashboard.uid);
      expect(dashboard.templating.list).toContainEqual(expect.objectContaining({ name: 'datasource', type: 'datasource', query: 'prometheus' }));
      const datasources = datasourceRefs(dashboard);
      expect(datasources.length).toBeGreaterThan(0);
      expect({ file, other: datasources.filter((d) => JSON.stringify(d) !== JSON.stringify({ type: 'prometheus', uid: '${datasource}' })) }).toEqual({ file, other: [] });
    }
    expect(uids.size).toBe(files.length);
  });

  it('mounts only files that exist in the repository', () => {
    const sources = Object.values(compose.services).flatMap((s) => bindMounts(s).map((m) => m.source));
    expect(sources.length).toBeGreaterThan(0);
    for (const source of sources) expect({ source, exists: existsSync(path.join(ROOT, source)) }).toEqual({ source, exists: true });
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
    const harness = parseConf(STATIC_CONF);
    const primary = commandSettings(compose.services.primary.command);
    const replica = commandSettings(compose.services.replica.command);
    expect(replica).toEqual(primary);
    expect(primary).toEqual(withoutHarnessOnly(harness));
    // Production keeps the durable defaults the harness turns off for speed.
    expect(primary.fsync ?? 'on').toBe('on');
    expect(primary.full_page_writes ?? 'on').toBe('on');
    expect(harness.fsync).toBe('off'); // if the harness ever turns fsync on, revisit HARNESS_ONLY
  });

  (onPath('haproxy') ? it : it.skip)('haproxy.cfg passes `haproxy -c` (only the compose host names cannot resolve here)', async () => {
    const result = await runTool('haproxy', ['-c', '-f', HAPROXY_CFG]);
    expect(result.code).toBe(0);
    const warnings = result.output.split('\n').filter((l) => l.includes('[WARNING]'));
    for (const w of warnings) expect(w).toMatch(/could not resolve address '(relay-a|relay-b)'/);
  });

  itWithTool('promtool')('prometheus.yml and the alert rules pass promtool', async () => {
    expect(await runTool('promtool', ['check', 'config', '--syntax-only', PROMETHEUS_CFG])).toEqual({ code: 0, output: expect.any(String) });
    expect(await runTool('promtool', ['check', 'rules', 'deploy/prometheus/buzz-relay.rules.yml'])).toEqual({ code: 0, output: expect.any(String) });
  });
});
