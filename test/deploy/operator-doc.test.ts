/**
 * docs/operator.md against the relay itself: every environment variable the relay reads is in the
 * configuration table (and the table names none it does not read); every `buzz_*` and `http_*` metric family
 * the relay registers, found in src/ and scraped from a running relay's /metrics, is in the
 * metrics section with the type it really has; and the alert rules in deploy/prometheus use only
 * metrics that exist and link runbooks that exist.
 */
import { readFileSync } from 'node:fs';
import { createTestDatabase, TestDatabase } from '../harness/test-database.js';
import { RelayProcess, startRelay } from '../harness/relay-process.js';
import {
  markdownAnchors,
  markdownSection,
  OPERATOR_DOC,
  readYaml,
  relayEnvVarNames,
  sourceMetricFamilies,
  tableRowsByName,
} from './deploy-sources.js';

const RULES_FILE = 'deploy/prometheus/buzz-relay.rules.yml';
/** Rows of work that is in progress; their variables may not be read yet. */
const PENDING_MARK = '(Redis fan-out';

interface AlertRule {
  alert: string;
  expr: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

const doc = readFileSync(OPERATOR_DOC, 'utf8');
const configSection = markdownSection(doc, 'Configuration');
const metricsSection = markdownSection(doc, 'Metrics');
const documentedVars = tableRowsByName(configSection, /^[A-Z][A-Z0-9_]*$/);
const metricRows = tableRowsByName(metricsSection, /^(?:buzz|http)_[a-z0-9_]+$/);

/** Families the metrics section mentions anywhere (tables, or the placeholder list for work in progress). */
const mentionedInMetrics = (family: string) => metricsSection.includes(`\`${family}\``) || metricsSection.includes(`\`${family}{`);

/** `buzz_*` families an alert expression uses (histogram series reduced to their family). */
function familiesIn(expr: string): string[] {
  return [...expr.matchAll(/\b(buzz_[a-z0-9_]+)/g)].map((m) => m[1].replace(/_(bucket|sum|count)$/, ''));
}

/** `# TYPE name type` lines of a Prometheus exposition: name → type. */
function exposedTypes(text: string): Map<string, string> {
  return new Map([...text.matchAll(/^# TYPE (\S+) (\w+)$/gm)].map((m) => [m[1], m[2]]));
}

describe('docs/operator.md: configuration', () => {
  const read = relayEnvVarNames();

  it('finds the variables the relay reads (sanity: the scan sees known ones)', () => {
    expect([...read]).toEqual(expect.arrayContaining(['DATABASE_URL', 'READ_DATABASE_URL', 'BUZZ_REPLICA_READ_MAX_AGE_MS', 'PORT', 'BUZZ_RELAY_PRIVATE_KEY']));
  });

  it('lists every variable the relay reads', () => {
    expect([...read].filter((name) => !documentedVars.has(name)).sort()).toEqual([]);
  });

  it('lists no variable the relay does not read, except rows of work in progress', () => {
    const stale = [...documentedVars].filter(([name, row]) => !read.has(name) && !row.includes(PENDING_MARK)).map(([name]) => name);
    expect(stale).toEqual([]);
  });

  it('gives every variable a default and an accepted range or form', () => {
    for (const [name, row] of documentedVars) {
      const cells = row.split('|').slice(1, -1).map((c) => c.trim());
      expect({ name, cells: cells.length >= 3 && cells[1] !== '' && cells[2] !== '' }).toEqual({ name, cells: true });
    }
  });
});

describe('docs/operator.md: metrics', () => {
  const inSource = sourceMetricFamilies();

  it('finds the families in src/ (sanity: the scan sees known ones)', () => {
    expect([...inSource]).toEqual(expect.arrayContaining(['buzz_db_route_decision', 'buzz_db_pool_waiters', 'buzz_ws_connections_active', 'http_requests_total']));
  });

  it('documents every buzz_* and http_* family named in src/', () => {
    expect([...inSource].filter((family) => !mentionedInMetrics(family)).sort()).toEqual([]);
  });

  it('has no table row for a family the relay does not have', () => {
    expect([...metricRows.keys()].filter((family) => !inSource.has(family)).sort()).toEqual([]);
  });

  describe('against a running relay', () => {
    let db: TestDatabase;
    let relay: RelayProcess;
    let exposed: Map<string, string>;

    beforeAll(async () => {
      db = await createTestDatabase();
      relay = await startRelay({ DATABASE_URL: db.writerUrl, READ_DATABASE_URL: db.readerUrl });
      const res = await fetch(relay.metricsUrl);
      expect(res.status).toBe(200);
      exposed = exposedTypes(await res.text());
    });

    afterAll(async () => {
      await relay?.stop();
      await db?.drop();
    });

    it('documents every buzz_* and http_* family /metrics exposes', () => {
      const families = [...exposed.keys()].filter((name) => name.startsWith('buzz_') || name.startsWith('http_'));
      expect(families.length).toBeGreaterThan(20);
      expect(families.filter((family) => !mentionedInMetrics(family)).sort()).toEqual([]);
    });

    it('gives each documented family the type /metrics reports', () => {
      for (const [family, row] of metricRows) {
        const documentedType = row.split('|')[2].trim().split(' ')[0];
        const type = exposed.get(family);
        if (type !== undefined) expect({ family, type: documentedType }).toEqual({ family, type });
      }
    });
  });
});

describe('alert rules (deploy/prometheus) and the Alerts section', () => {
  const rules = readYaml<{ groups: Array<{ rules: AlertRule[] }> }>(RULES_FILE).groups.flatMap((g) => g.rules);
  const anchors = markdownAnchors(doc);
  const alertsSection = markdownSection(doc, 'Alerts');

  it('uses only metric families the relay has', () => {
    const inSource = sourceMetricFamilies();
    for (const rule of rules) {
      const unknown = familiesIn(rule.expr).filter((family) => !inSource.has(family));
      expect({ alert: rule.alert, unknown }).toEqual({ alert: rule.alert, unknown: [] });
    }
  });

  it('gives every alert a severity and a runbook that exists in docs/operator.md', () => {
    for (const rule of rules) {
      const runbook = rule.annotations?.runbook ?? '';
      expect({ alert: rule.alert, severity: rule.labels?.severity }).toEqual({ alert: rule.alert, severity: expect.stringMatching(/^(page|ticket)$/) });
      expect({ alert: rule.alert, runbook }).toEqual({ alert: rule.alert, runbook: expect.stringMatching(/^docs\/operator\.md#/) });
      expect({ alert: rule.alert, anchorExists: anchors.has(runbook.split('#')[1]) }).toEqual({ alert: rule.alert, anchorExists: true });
    }
  });

  it('lists the same alerts in docs/operator.md as in the rules file', () => {
    const documented = [...tableRowsByName(alertsSection, /^Buzz\w+$/).keys()].sort();
    expect(documented).toEqual(rules.map((r) => r.alert).sort());
  });

  it('links only anchors that exist', () => {
    const links = [...doc.matchAll(/\]\(#([a-z0-9_-]+)\)/g)].map((m) => m[1]);
    expect(links.length).toBeGreaterThan(0);
    expect(links.filter((a) => !anchors.has(a))).toEqual([]);
  });
});
