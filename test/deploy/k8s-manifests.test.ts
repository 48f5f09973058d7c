/**
 * deploy/k8s: the manifests kustomize assembles parse as YAML, hold the kinds an operator needs,
 * and agree with each other and with the relay: selectors match the pod labels, probes point at
 * /readyz and /healthz on the container port, that port is the relay's PORT, every ConfigMap key
 * is a variable the relay reads, the four connection settings come from the Secret, and the grace
 * period covers the relay's shutdown. `kubectl kustomize` renders both kustomizations where
 * kubectl is installed.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { loadConfig } from '../../src/config/app-config.js';
import { readBudgetWarning } from '../../packages/read-path/src/replica-fence/replica-fence.constants.js';
import { onPath, readYaml, readYamlDocuments, relayEnvVarNames, ROOT, runTool, shutdownBudgetMs } from './deploy-sources.js';

const K8S = 'deploy/k8s';

interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec?: Record<string, unknown>;
  data?: Record<string, string>;
}

interface Probe {
  httpGet?: { path: string; port: number | string };
  periodSeconds?: number;
  timeoutSeconds?: number;
  failureThreshold?: number;
}

interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { secretKeyRef?: { name: string; key: string; optional?: boolean }; configMapKeyRef?: { name: string; key: string } };
}

interface Container {
  name: string;
  image: string;
  ports: Array<{ name?: string; containerPort: number }>;
  env?: EnvVar[];
  envFrom?: Array<{ configMapRef?: { name: string }; secretRef?: { name: string } }>;
  readinessProbe?: Probe;
  livenessProbe?: Probe;
  startupProbe?: Probe;
  lifecycle?: { preStop?: { exec?: { command: string[] }; sleep?: { seconds: number } } };
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
}

interface PodTemplate {
  metadata: { labels: Record<string, string>; annotations?: Record<string, string> };
  spec: { containers: Container[]; terminationGracePeriodSeconds?: number };
}

interface DeploymentSpec {
  replicas: number;
  selector: { matchLabels: Record<string, string> };
  strategy?: { rollingUpdate?: { maxUnavailable?: number | string } };
  template: PodTemplate;
}

/** Every manifest a kustomization lists, parsed (multi-document files included). */
function kustomizationManifests(dir: string): Manifest[] {
  const kustomization = readYaml<{ resources: string[] }>(`${dir}/kustomization.yaml`);
  return kustomization.resources.flatMap((file) => {
    if (!existsSync(path.join(ROOT, dir, file))) throw new Error(`${dir}/kustomization.yaml lists ${file}, which does not exist`);
    return readYamlDocuments<Manifest>(`${dir}/${file}`);
  });
}

function only<T extends Manifest>(manifests: Manifest[], kind: string): T {
  const found = manifests.filter((m) => m.kind === kind);
  if (found.length !== 1) throw new Error(`expected exactly one ${kind}, found ${found.length}`);
  return found[0] as T;
}

function selects(selector: Record<string, string>, labels: Record<string, string>): boolean {
  return Object.keys(selector).length > 0 && Object.entries(selector).every(([k, v]) => labels[k] === v);
}

/** Seconds the preStop hook holds the pod before SIGTERM. */
function preStopSeconds(container: Container): number {
  const hook = container.lifecycle?.preStop;
  if (hook?.sleep) return hook.sleep.seconds;
  const [cmd, seconds] = hook?.exec?.command ?? [];
  return cmd === 'sleep' ? Number(seconds) : 0;
}

describe('deploy/k8s', () => {
  const manifests = kustomizationManifests(K8S);
  const deployment = only<Manifest & { spec: DeploymentSpec }>(manifests, 'Deployment');
  const service = only<Manifest & { spec: { selector: Record<string, string>; ports: Array<{ name: string; port: number; targetPort: number | string }> } }>(manifests, 'Service');
  const pdb = only<Manifest & { spec: { minAvailable?: number; selector: { matchLabels: Record<string, string> } } }>(manifests, 'PodDisruptionBudget');
  const configMap = only(manifests, 'ConfigMap');
  const pod = deployment.spec.template;
  const relay = pod.spec.containers.find((c) => c.name === 'relay')!;
  const httpPort = relay?.ports.find((p) => p.name === 'http');
  const metricsPort = relay?.ports.find((p) => p.name === 'metrics');

  it('holds a relay Deployment, its Service, a PodDisruptionBudget and a ConfigMap, with the v1 APIs', () => {
    expect(manifests.map((m) => `${m.apiVersion} ${m.kind}`).sort()).toEqual(['apps/v1 Deployment', 'policy/v1 PodDisruptionBudget', 'v1 ConfigMap', 'v1 Service']);
    expect(relay).toBeDefined();
  });

  it('runs two pods, replaced one at a time without losing a ready one, one kept through disruptions', () => {
    expect(deployment.spec.replicas).toBe(2);
    expect(deployment.spec.strategy?.rollingUpdate?.maxUnavailable).toBe(0);
    expect(pdb.spec.minAvailable).toBeGreaterThanOrEqual(1);
    expect(pdb.spec.minAvailable).toBeLessThan(deployment.spec.replicas);
  });

  it('selects the pods from the Deployment, the Service and the PDB', () => {
    expect(selects(deployment.spec.selector.matchLabels, pod.metadata.labels)).toBe(true);
    expect(selects(service.spec.selector, pod.metadata.labels)).toBe(true);
    expect(selects(pdb.spec.selector.matchLabels, pod.metadata.labels)).toBe(true);
  });

  it("exposes the relay's PORT as the container port the Service and probes use", () => {
    const data = configMap.data ?? {};
    const bindPort = Number(/:(\d+)$/.exec(data.BUZZ_BIND_ADDR ?? '0.0.0.0:3000')![1]);
    const relayPort = data.PORT !== undefined ? Number(data.PORT) : bindPort;
    expect(bindPort).toBe(relayPort);
    expect(httpPort?.containerPort).toBe(relayPort);
    const servicePort = service.spec.ports.find((p) => p.name === 'http');
    expect([httpPort?.name, httpPort?.containerPort]).toContain(servicePort?.targetPort);
  });

  it('probes readiness on /readyz and liveness on /healthz, on the http port', () => {
    expect(relay.readinessProbe?.httpGet).toEqual({ path: '/readyz', port: 'http' });
    expect(relay.livenessProbe?.httpGet).toEqual({ path: '/healthz', port: 'http' });
    // /readyz answers from state, but a busy pod's event loop needs a margin: a shorter timeout would flap.
    expect(relay.readinessProbe?.timeoutSeconds).toBeGreaterThan(2);
    expect(relay.startupProbe?.httpGet?.path).toBe('/healthz');
  });

  it('reads the writer, replica, Redis and signing key from the Secret, and the rest from the ConfigMap', () => {
    const env = new Map((relay.env ?? []).map((e) => [e.name, e]));
    for (const name of ['DATABASE_URL', 'READ_DATABASE_URL', 'BUZZ_REDIS_URL', 'BUZZ_RELAY_PRIVATE_KEY']) {
      expect({ name, key: env.get(name)?.valueFrom?.secretKeyRef?.key }).toEqual({ name, key: name });
    }
    // Only the replica is optional: more than one pod needs Redis and one shared identity.
    const optional = [...env.values()].filter((e) => e.valueFrom?.secretKeyRef?.optional).map((e) => e.name);
    expect(optional).toEqual(['READ_DATABASE_URL']);
    expect(relay.envFrom).toContainEqual({ configMapRef: { name: configMap.metadata.name } });
  });

  it('sets only variables the relay reads in the ConfigMap, none of them secrets', () => {
    const known = relayEnvVarNames();
    const keys = Object.keys(configMap.data ?? {});
    expect(keys.filter((k) => !known.has(k))).toEqual([]);
    expect(keys.filter((k) => /URL$|KEY$/.test(k) && k !== 'RELAY_URL')).toEqual([]);
    expect(configMap.data?.BUZZ_REQUIRE_AUTH_TOKEN).toBe('true');
  });

  it('routes history reads to the replica: a read budget at or above the fence minimum, so no start-up warning', () => {
    const config = loadConfig({ ...configMap.data, DATABASE_URL: 'postgres://w@writer/buzz', READ_DATABASE_URL: 'postgres://r@replica/buzz' });
    expect(config.replica.readMaxAgeMs).toBeGreaterThan(0);
    expect(readBudgetWarning(config.replica.readMaxAgeMs, config.replica.probeIntervalMs, true)).toBeUndefined();
  });

  it('waits for endpoints to drop the pod, then gives the relay its whole shutdown budget', () => {
    const preStop = preStopSeconds(relay);
    expect(preStop).toBeGreaterThan(0);
    expect(pod.spec.terminationGracePeriodSeconds).toBeGreaterThanOrEqual(preStop + shutdownBudgetMs() / 1000);
  });

  it('requests CPU and memory, and caps memory', () => {
    expect(relay.resources?.requests).toEqual({ cpu: expect.any(String), memory: expect.any(String) });
    expect(relay.resources?.limits?.memory).toEqual(expect.any(String));
  });

  it("opens the relay's /metrics listener on the metrics container port, to the cluster, not on the http port", () => {
    const metrics = loadConfig({ BUZZ_METRICS_HOST: configMap.data?.BUZZ_METRICS_HOST, BUZZ_METRICS_PORT: configMap.data?.BUZZ_METRICS_PORT }).metrics;
    expect(metrics.host).toBe('0.0.0.0');
    expect(metricsPort?.containerPort).toBe(metrics.port);
    expect(metricsPort?.containerPort).not.toBe(httpPort?.containerPort);
    const servicePort = service.spec.ports.find((p) => p.name === 'metrics');
    expect([metricsPort?.name, metricsPort?.containerPort]).toContain(servicePort?.targetPort);
  });

  it('annotates the pods for scraping on the metrics port, and the ServiceMonitor scrapes the same port', () => {
    expect(pod.metadata.annotations).toEqual(
      expect.objectContaining({ 'prometheus.io/scrape': 'true', 'prometheus.io/port': String(metricsPort?.containerPort), 'prometheus.io/path': '/metrics' }),
    );
    const monitor = only<Manifest & { spec: { selector: { matchLabels: Record<string, string> }; endpoints: Array<{ port: string; path: string }> } }>(
      kustomizationManifests(`${K8S}/monitoring`),
      'ServiceMonitor',
    );
    expect(selects(monitor.spec.selector.matchLabels, service.metadata.labels ?? {})).toBe(true);
    expect(monitor.spec.endpoints).toEqual([expect.objectContaining({ port: 'metrics', path: '/metrics' })]);
  });

  it('documents the Secret it reads with an example that is not applied', () => {
    const [example] = readYamlDocuments<Manifest & { stringData: Record<string, string> }>(`${K8S}/secret.example.yaml`);
    const secretNames = new Set((relay.env ?? []).map((e) => e.valueFrom?.secretKeyRef?.name).filter(Boolean));
    expect([...secretNames]).toEqual([example.metadata.name]);
    expect(Object.keys(example.stringData).sort()).toEqual(['BUZZ_REDIS_URL', 'BUZZ_RELAY_PRIVATE_KEY', 'DATABASE_URL', 'READ_DATABASE_URL']);
    expect(manifests.some((m) => m.kind === 'Secret')).toBe(false);
  });

  (onPath('kubectl') ? it : it.skip)('renders with `kubectl kustomize`', async () => {
    for (const dir of [K8S, `${K8S}/monitoring`]) {
      const result = await runTool('kubectl', ['kustomize', dir]);
      expect({ dir, code: result.code }).toEqual({ dir, code: 0 });
      expect(readKinds(result.output)).toEqual(dir === K8S ? ['ConfigMap', 'Deployment', 'PodDisruptionBudget', 'Service'] : ['PrometheusRule', 'ServiceMonitor']);
    }
  });
});

function readKinds(rendered: string): string[] {
  return [...rendered.matchAll(/^kind: (\w+)$/gm)].map((m) => m[1]).sort();
}
