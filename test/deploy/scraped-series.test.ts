/**
 * What Grafana and Prometheus are given to read, against what a relay really exports. A relay on
 * the real writer + replica pair (with Redis) takes a short load: a NIP-42 connection, a channel
 * and messages published, REQ and bridge /query reads on the replica (by a reader who wrote
 * nothing), reads on the writer (a read of one's own fresh write spills), an invalid EVENT. Then its /metrics is scraped once and:
 *
 * - every PromQL expression of the dashboards in deploy/grafana/dashboards (panels and variables)
 *   names only series the scrape holds (histograms by their `_bucket`/`_sum`/`_count` samples),
 *   with the labels it matches or groups on, and label values the relay exports or can export
 *   (a literal in src/ for outcomes no short load produces, such as `decision="rejected"`); and
 *   the expressions are valid PromQL (`promtool check rules`);
 * - every synthetic series of the alert unit tests (deploy/prometheus/buzz-relay.rules.test.yml)
 *   has the name and exactly the label names the relay exports for it, with values it can export,
 *   so the tests fire the alerts from series of the real shape; and every metric the alert rules
 *   query carries the labels they match or group on.
 *
 * `instance` and `job` are Prometheus's own labels and `up` its own series: they are not the
 * relay's. A family the load does not produce (Redis gap fills need an outage) is compared with
 * the `labelNames` its constructor in src/ declares.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { stringify } from 'yaml';
import { eventually } from '../harness/eventually.js';
import { httpRequest, newIdentity, RawClient } from '../harness/nostr-clients.js';
import { RelayFixture, startRelayFixture } from '../harness/relay-fixture.js';
import { RedisServer, startRedisServer } from '../harness/redis-server.js';
import { itWithTool, readText, readYaml, ROOT, runTool, sourceFiles } from './deploy-sources.js';
import { Exposition, indexExposition, MetricRef, metricRefs, parseSeries, RULES_FILE, RULES_TEST_FILE, type RuleTestFile } from './prom-text.js';

const DASHBOARDS = 'deploy/grafana/dashboards';
/** Labels Prometheus attaches at scrape time. */
const SCRAPE_LABELS = new Set(['instance', 'job']);
/** Series Prometheus makes itself. */
const PROMETHEUS_SERIES = new Set(['up']);
/** How many publish-then-read rounds may pass before one read of an own fresh write spills. */
const SPILL_ROUNDS = 20;

interface DashboardQuery {
  readonly where: string;
  readonly expr: string;
}

/** Every PromQL expression of a dashboard: panel targets (rows included) and query variables. */
function dashboardQueries(file: string): DashboardQuery[] {
  const dashboard = JSON.parse(readText(`${DASHBOARDS}/${file}`)) as {
    panels: Array<{ title: string; targets?: Array<{ refId: string; expr: string }>; panels?: unknown[] }>;
    templating: { list: Array<{ name: string; type: string; query?: { query: string } | string }> };
  };
  const panels = dashboard.panels.flatMap((p) => [p, ...((p.panels ?? []) as typeof dashboard.panels)]);
  const fromPanels = panels.flatMap((p) => (p.targets ?? []).map((t) => ({ where: `${file}: "${p.title}" ${t.refId}`, expr: t.expr })));
  const fromVariables = dashboard.templating.list
    .filter((v) => v.type === 'query')
    .map((v) => {
      const query = typeof v.query === 'string' ? v.query : (v.query?.query ?? '');
      // label_values(metric, label): the metric must carry the label.
      const m = /^label_values\((.+),\s*([a-zA-Z_]\w*)\)$/.exec(query.trim());
      return { where: `${file}: variable ${v.name}`, expr: m ? `sum by (${m[2]}) (${m[1]})` : query };
    });
  return [...fromPanels, ...fromVariables];
}

/** Grafana's variables replaced by values Prometheus accepts. */
function withoutGrafanaVariables(expr: string): string {
  return expr.replace(/\$__(rate_)?interval|\$__range/g, '5m').replace(/\$\{?\w+\}?/g, '.*');
}

const source = sourceFiles()
  .map((f) => readFileSync(f, 'utf8'))
  .join('\n');

/** `labelNames: [...]` of the prom-client constructor that registers `family` in src/, if literal. */
function sourceLabelNames(family: string): string[] | undefined {
  const m = new RegExp(`name:\\s*'${family}'[^}]*?labelNames:\\s*\\[([^\\]]*)\\]`).exec(source);
  if (m) return [...m[1].matchAll(/'([a-z_]+)'/g)].map((l) => l[1]);
  return new RegExp(`name:\\s*'${family}'`).test(source) ? [] : undefined;
}

/** A label value the relay can export: seen on /metrics, or a string literal in src/. */
function exportable(exposition: Exposition, name: string, label: string, value: string): boolean {
  return exposition.values.get(name)?.get(label)?.has(value) === true || source.includes(`'${value}'`);
}

/** The label-name sets /metrics shows for a sample name, else the one src/ declares. */
function labelSetsOf(exposition: Exposition, name: string): string[][] | undefined {
  const scraped = exposition.labelSets.get(name);
  if (scraped) return [...scraped].map((key) => (key === '' ? [] : key.split(',')));
  const family = name.replace(/_(bucket|sum|count)$/, '');
  const declared = sourceLabelNames(name) ?? sourceLabelNames(family);
  if (declared === undefined) return undefined;
  return [name.endsWith('_bucket') ? [...declared, 'le'].sort() : [...declared].sort()];
}

/** Problems of one metric reference of a query against the scrape (empty when none). */
function refProblems(exposition: Exposition, ref: MetricRef, needSamples: boolean): string[] {
  if (PROMETHEUS_SERIES.has(ref.name)) return [];
  if (needSamples && !exposition.labelSets.has(ref.name)) return [`${ref.name}: no sample on /metrics`];
  const sets = labelSetsOf(exposition, ref.name);
  if (!sets) return [`${ref.name}: neither on /metrics nor registered in src/`];
  const problems: string[] = [];
  for (const label of ref.labelNames.filter((l) => !SCRAPE_LABELS.has(l))) {
    if (!sets.some((set) => set.includes(label))) problems.push(`${ref.name}: no label ${label}`);
  }
  for (const [label, value] of Object.entries(ref.equals)) {
    if (!SCRAPE_LABELS.has(label) && !exportable(exposition, ref.name, label, value)) problems.push(`${ref.name}: ${label}="${value}" is never exported`);
  }
  return problems;
}

let redis: RedisServer;
let fixture: RelayFixture;
let exposition: Exposition;

beforeAll(async () => {
  redis = await startRedisServer();
  fixture = await startRelayFixture({
    BUZZ_REDIS_URL: redis.url,
    BUZZ_REPLICA_READ_MAX_AGE_MS: '30000',
    BUZZ_REQUIRE_AUTH_TOKEN: 'false', // /query below uses the X-Pubkey development header
  });
  const { relay, db } = fixture;
  const metricsText = async () => (await httpRequest(relay.metricsUrl, {})).body;
  const alice = newIdentity();
  const bob = newIdentity();
  const client = await RawClient.authed(relay.wsUrl, alice);
  const reader = await RawClient.authed(relay.wsUrl, bob);
  try {
    const channel = randomUUID();
    expect(await client.publish(alice.sign({ kind: 9007, tags: [['h', channel], ['name', channel]] }))).toEqual([true, '']);
    expect(await client.publish(alice.sign({ kind: 9, content: 'first', tags: [['h', channel]] }))).toEqual([true, '']);
    await db.waitForReplica();
    // Bob wrote nothing, so his reads go to the replica once the fence has a proof.
    await eventually('the replica fence to open', async () => (await metricsText()).includes('\nbuzz_db_replica_fence_open 1'));
    expect((await reader.req('history', { kinds: [9], '#h': [channel] })).end[0]).toBe('EOSE');
    const query = await httpRequest(`${relay.httpUrl}/query`, {
      method: 'POST',
      headers: { 'x-pubkey': bob.pubkey },
      body: JSON.stringify([{ kinds: [9], '#h': [channel] }]),
    });
    expect(query.status).toBe(200);
    const forged = { ...alice.sign({ kind: 9, content: 'forged', tags: [['h', channel]] }), content: 'changed after signing' };
    expect((await client.publish(forged))[0]).toBe(false);
    // Reading one's own write before a heartbeat covers it spills to the writer
    // (fence_wall_behind). Beats land every 500 ms, so an immediate read nearly always spills;
    // a few rounds make it certain without timing anything.
    for (let round = 0; round < SPILL_ROUNDS; round++) {
      expect(await client.publish(alice.sign({ kind: 9, content: `round ${round}`, tags: [['h', channel]] }))).toEqual([true, '']);
      expect((await client.req(`own-${round}`, { kinds: [9], '#h': [channel], authors: [alice.pubkey] })).end[0]).toBe('EOSE');
      if ((await metricsText()).includes('buzz_db_reader_spill_total{')) break;
    }
  } finally {
    client.close();
    reader.close();
  }
  const scrape = await httpRequest(fixture.relay.metricsUrl, {});
  expect(scrape.status).toBe(200);
  exposition = indexExposition(scrape.body);
});

afterAll(async () => {
  await fixture?.close();
  await redis?.stop();
});

describe('the load', () => {
  it('produced the read path the dashboard shows: replica and writer reads, a spill, an ingest rejection', () => {
    expect(exposition.values.get('buzz_db_route_decision')?.get('decision')).toEqual(new Set(['replica', 'writer']));
    expect([...(exposition.values.get('buzz_db_route_decision')?.get('path') ?? [])]).toEqual(expect.arrayContaining(['req_historical', 'bridge_query']));
    expect(exposition.labelSets.has('buzz_db_reader_spill_total')).toBe(true);
    expect(exposition.values.get('buzz_events_rejected_total')?.get('reason')).toEqual(new Set(['invalid']));
  });
});

describe('Grafana dashboards against /metrics', () => {
  const files = readdirSync(path.join(ROOT, DASHBOARDS)).filter((f) => f.endsWith('.json'));
  const queries = files.flatMap(dashboardQueries);

  it('finds the queries (sanity: panels and the instance variable are read)', () => {
    expect(queries.length).toBeGreaterThan(15);
    expect(queries.map((q) => q.where)).toEqual(expect.arrayContaining([expect.stringMatching(/variable instance$/)]));
  });

  it('queries only series a loaded relay exports, with labels and values it exports', () => {
    const problems = queries.flatMap((q) => {
      const refs = metricRefs(q.expr);
      if (refs.length === 0) return [`${q.where}: names no metric`];
      return refs.flatMap((ref) => refProblems(exposition, ref, true).map((p) => `${q.where}: ${p}`));
    });
    expect(problems).toEqual([]);
  });

  itWithTool('promtool')('holds valid PromQL (promtool check rules on every expression)', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'buzz-dashboard-promql-'));
    try {
      const file = path.join(dir, 'dashboard-queries.rules.yml');
      const rules = queries.map((q, i) => ({ record: `dashboard:query_${i}`, expr: withoutGrafanaVariables(q.expr) }));
      writeFileSync(file, stringify({ groups: [{ name: 'dashboard-queries', rules }] }));
      const result = await runTool('promtool', ['check', 'rules', file]);
      expect({ code: result.code, output: result.output }).toEqual({ code: 0, output: expect.stringContaining(`SUCCESS: ${rules.length} rules found`) });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('alert rules and their unit tests against /metrics', () => {
  const testFile = readYaml<RuleTestFile>(RULES_TEST_FILE);
  const inputs = testFile.tests.flatMap((t) => t.input_series.map((s) => ({ test: t.name ?? '', ...parseSeries(s.series) })));
  const rules = readYaml<{ groups: Array<{ rules: Array<{ alert: string; expr: string }> }> }>(RULES_FILE).groups.flatMap((g) => g.rules);

  it('feeds the alert tests series named and labelled as the relay exports them', () => {
    const problems = inputs
      .filter((s) => !PROMETHEUS_SERIES.has(s.name))
      .flatMap((s) => {
        const labels = Object.keys(s.labels)
          .filter((l) => !SCRAPE_LABELS.has(l))
          .sort();
        const sets = labelSetsOf(exposition, s.name);
        if (!sets) return [`${s.test}: ${s.name} is not a series of the relay`];
        const shape = sets.some((set) => set.join(',') === labels.join(',')) ? [] : [`${s.test}: ${s.name}{${labels}} but the relay exports {${sets.map((x) => x.join(',')).join('} or {')}}`];
        const values = Object.entries(s.labels)
          .filter(([l]) => !SCRAPE_LABELS.has(l) && l !== 'le')
          .filter(([l, v]) => !exportable(exposition, s.name, l, v))
          .map(([l, v]) => `${s.test}: ${s.name}: ${l}="${v}" is never exported`);
        return [...shape, ...values];
      });
    expect(problems).toEqual([]);
  });

  it('gives the histograms of the alert tests the buckets the relay exports', () => {
    for (const s of inputs.filter((x) => x.name.endsWith('_bucket'))) {
      expect({ series: s.name, le: exposition.values.get(s.name)?.has('le') && exposition.values.get(s.name)!.get('le')!.has(s.labels.le) }).toEqual({ series: s.name, le: true });
    }
  });

  it('queries only metrics that carry the labels the rules match and group on', () => {
    const problems = rules.flatMap((r) => metricRefs(r.expr).flatMap((ref) => refProblems(exposition, ref, false).map((p) => `${r.alert}: ${p}`)));
    expect(problems).toEqual([]);
  });
});
