/**
 * The alert rules (deploy/prometheus/buzz-relay.rules.yml) under promtool: they load
 * (`promtool check rules`), and their unit tests (buzz-relay.rules.test.yml, `promtool test
 * rules`) pass. Every alert has a test that fires it, expects its labels and annotations as the
 * rule states them (runbook link included), and sees it silent at an earlier time. The k8s
 * monitoring kustomization ships the same groups as a PrometheusRule. promtool is required
 * under CI=true (.ci/run installs Debian's prometheus package); elsewhere its tests skip without it.
 *
 * That the synthetic series are shaped as the relay exports them is checked against a loaded
 * relay's /metrics in scraped-series.test.ts.
 */
import path from 'node:path';
import { itWithTool, readYaml, readYamlDocuments, runTool } from './deploy-sources.js';
import { RULES_FILE, RULES_TEST_FILE, type RuleTestFile } from './prom-text.js';

const PROMETHEUS_RULE = 'deploy/k8s/monitoring/prometheusrule.yaml';

interface AlertRule {
  alert: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

interface RuleGroup {
  name: string;
  rules: AlertRule[];
}

const groups = readYaml<{ groups: RuleGroup[] }>(RULES_FILE).groups;
const rules = groups.flatMap((g) => g.rules);
const testFile = readYaml<RuleTestFile>(RULES_TEST_FILE);
const checks = testFile.tests.flatMap((t) => t.alert_rule_test ?? []);

describe('alert rules under promtool', () => {
  itWithTool('promtool')('load with `promtool check rules`', async () => {
    const result = await runTool('promtool', ['check', 'rules', RULES_FILE]);
    expect(result).toEqual({ code: 0, output: expect.stringContaining(`SUCCESS: ${rules.length} rules found`) });
  });

  itWithTool('promtool')('pass their unit tests with `promtool test rules`', async () => {
    const result = await runTool('promtool', ['test', 'rules', RULES_TEST_FILE]);
    expect({ code: result.code, output: result.output.trim() }).toEqual({ code: 0, output: expect.stringMatching(/SUCCESS$/) });
  });

  it('tests the rules file itself', () => {
    const loaded = testFile.rule_files.map((f) => path.join(path.dirname(RULES_TEST_FILE), f));
    expect(loaded).toEqual([RULES_FILE]);
  });

  it('parses, one rule per alert name (sanity)', () => {
    expect(rules.length).toBeGreaterThanOrEqual(15);
    expect(new Set(rules.map((r) => r.alert)).size).toBe(rules.length);
  });

  it.each(rules.map((r) => [r.alert, r] as const))('%s: fired by a test case with its labels, summary and runbook', (_name, rule) => {
    const mine = checks.filter((c) => c.alertname === rule.alert);
    const firing = mine.flatMap((c) => c.exp_alerts ?? []);
    expect({ alert: rule.alert, firing: firing.length > 0 }).toEqual({ alert: rule.alert, firing: true });
    for (const exp of firing) {
      // Every label the rule sets, with its value; every annotation it sets (summary rendered,
      // runbook verbatim), and no other.
      expect(exp.exp_labels).toEqual(expect.objectContaining(rule.labels ?? {}));
      expect(Object.keys(exp.exp_annotations ?? {}).sort()).toEqual(Object.keys(rule.annotations ?? {}).sort());
      expect(exp.exp_annotations?.runbook).toBe(rule.annotations?.runbook);
    }
  });

  it.each(rules.map((r) => [r.alert, r] as const))('%s: seen silent at an earlier time than it fires', (_name, rule) => {
    const mine = checks.filter((c) => c.alertname === rule.alert);
    const minutes = (t: string) => Number(/^(\d+)m$/.exec(t)?.[1] ?? NaN);
    const firstFiring = Math.min(...mine.filter((c) => (c.exp_alerts ?? []).length > 0).map((c) => minutes(c.eval_time)));
    const silentBefore = mine.filter((c) => (c.exp_alerts ?? []).length === 0 && minutes(c.eval_time) < firstFiring);
    expect({ alert: rule.alert, silentBefore: silentBefore.length > 0 }).toEqual({ alert: rule.alert, silentBefore: true });
  });

  it('tests no alert the rules file does not have', () => {
    const known = new Set(rules.map((r) => r.alert));
    expect([...new Set(checks.map((c) => c.alertname))].filter((a) => !known.has(a))).toEqual([]);
  });
});

describe('the PrometheusRule in deploy/k8s/monitoring', () => {
  const kustomization = readYaml<{ resources: string[] }>('deploy/k8s/monitoring/kustomization.yaml');
  const [rule] = readYamlDocuments<{ apiVersion: string; kind: string; metadata: { name: string }; spec: { groups: RuleGroup[] } }>(PROMETHEUS_RULE);

  it('is listed by the kustomization', () => {
    expect(kustomization.resources).toContain(path.basename(PROMETHEUS_RULE));
    expect([rule.apiVersion, rule.kind, rule.metadata.name]).toEqual(['monitoring.coreos.com/v1', 'PrometheusRule', 'buzz-relay']);
  });

  it("carries the rules file's groups unchanged (copy them after editing the rules file)", () => {
    expect(rule.spec.groups).toEqual(groups);
  });
});
