/**
 * Small readers for what the deploy tests compare: series selectors (`name{a="x",b="y"}`), the
 * Prometheus text exposition a relay serves on /metrics, and the metric references in a PromQL
 * expression (names, the label names each one is matched, grouped or joined on, and its equality
 * matchers), and the alert rules' unit-test file. Enough of PromQL for the expressions this
 * repository ships; not a general parser.
 */

export const RULES_FILE = 'deploy/prometheus/buzz-relay.rules.yml';
export const RULES_TEST_FILE = 'deploy/prometheus/buzz-relay.rules.test.yml';

interface ExpAlert {
  exp_labels?: Record<string, string>;
  exp_annotations?: Record<string, string>;
}

/** A `promtool test rules` file, as far as the tests read it. */
export interface RuleTestFile {
  rule_files: string[];
  tests: Array<{
    name?: string;
    input_series: Array<{ series: string; values: string }>;
    alert_rule_test?: Array<{ eval_time: string; alertname: string; exp_alerts?: ExpAlert[] }>;
  }>;
}

export interface Series {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
}

const LABEL_PAIR = /([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"/g;

/** `name{a="x",b="y"}` (or a bare name) → name and labels. */
export function parseSeries(selector: string): Series {
  const m = /^\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(?:\{(.*)\})?\s*$/.exec(selector);
  if (!m) throw new Error(`not a series selector: ${selector}`);
  const labels: Record<string, string> = {};
  for (const pair of (m[2] ?? '').matchAll(LABEL_PAIR)) labels[pair[1]] = pair[2];
  return { name: m[1], labels };
}

/** Every sample line of a text exposition, as a series (values and comments dropped). */
export function exposedSeries(text: string): Series[] {
  return text
    .split('\n')
    .filter((line) => line !== '' && !line.startsWith('#'))
    .map((line) => parseSeries(line.slice(0, line.lastIndexOf(' '))));
}

/** What an exposition holds, by sample name: the label-name sets seen and every value per label. */
export interface Exposition {
  readonly labelSets: Map<string, Set<string>>;
  readonly values: Map<string, Map<string, Set<string>>>;
}

export function indexExposition(text: string): Exposition {
  const labelSets = new Map<string, Set<string>>();
  const values = new Map<string, Map<string, Set<string>>>();
  for (const s of exposedSeries(text)) {
    const key = Object.keys(s.labels).sort().join(',');
    labelSets.set(s.name, (labelSets.get(s.name) ?? new Set()).add(key));
    const byLabel = values.get(s.name) ?? new Map<string, Set<string>>();
    for (const [k, v] of Object.entries(s.labels)) byLabel.set(k, (byLabel.get(k) ?? new Set()).add(v));
    values.set(s.name, byLabel);
  }
  return { labelSets, values };
}

/** One metric named in a PromQL expression. */
export interface MetricRef {
  readonly name: string;
  /** Label names in its selector, or in a by/without/on/ignoring/group_* list that applies to it. */
  readonly labelNames: readonly string[];
  /** `label="value"` matchers of its selector (regex and negative matchers are not included). */
  readonly equals: Readonly<Record<string, string>>;
}

const KEYWORDS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'bool', 'and', 'or', 'unless', 'offset', 'inf', 'nan']);
/** Aggregation operators, which may be followed by `by (…)` before their parenthesis. */
const AGGREGATIONS = new Set(['sum', 'min', 'max', 'avg', 'group', 'stddev', 'stdvar', 'count', 'count_values', 'bottomk', 'topk', 'quantile']);
const GROUPING = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right']);

/**
 * The metric references of a PromQL expression. Grafana's `$__rate_interval`-style variables are
 * allowed inside range brackets and label values. The label names of grouping clauses are given
 * to every metric of the expression (a coarse but safe reading: each one must carry the label,
 * which holds for the dashboards and rules here, where every grouping label is on every operand).
 */
export function metricRefs(expr: string): MetricRef[] {
  const refs: Array<{ name: string; labelNames: string[]; equals: Record<string, string> }> = [];
  const grouping: string[] = [];
  let i = 0;
  const src = expr;
  while (i < src.length) {
    const c = src[i];
    if (c === '"' || c === "'") {
      i = skipString(src, i);
      continue;
    }
    if (c === '[') {
      i = src.indexOf(']', i) + 1;
      if (i === 0) throw new Error(`unclosed [ in ${expr}`);
      continue;
    }
    if (c === '{') {
      // A selector without a name (`{__name__="…"}`) is not used here.
      throw new Error(`selector without a metric name in ${expr}`);
    }
    const ident = /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(src.slice(i));
    if (!ident || (i > 0 && /[0-9.$]/.test(src[i - 1]))) {
      i += ident ? ident[0].length : 1;
      continue;
    }
    const word = ident[0];
    i += word.length;
    const rest = src.slice(i);
    const ws = /^\s*/.exec(rest)![0].length;
    const next = rest[ws];
    if (GROUPING.has(word) && next === '(') {
      const close = src.indexOf(')', i + ws);
      grouping.push(...labelList(src.slice(i + ws + 1, close)));
      i = close + 1;
      continue;
    }
    if (KEYWORDS.has(word.toLowerCase()) || AGGREGATIONS.has(word) || next === '(') continue;
    const ref = { name: word, labelNames: [] as string[], equals: {} as Record<string, string> };
    if (next === '{') {
      const close = selectorEnd(src, i + ws);
      const body = src.slice(i + ws + 1, close);
      for (const m of body.matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!=|!~|=)\s*("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')/g)) {
        ref.labelNames.push(m[1]);
        if (m[2] === '=') ref.equals[m[1]] = m[3].slice(1, -1);
      }
      i = close + 1;
    }
    refs.push(ref);
  }
  return refs.map((r) => ({ ...r, labelNames: [...new Set([...r.labelNames, ...grouping])] }));
}

function skipString(src: string, start: number): number {
  const quote = src[start];
  let i = start + 1;
  while (i < src.length && src[i] !== quote) i += src[i] === '\\' ? 2 : 1;
  return i + 1;
}

function selectorEnd(src: string, open: number): number {
  let i = open + 1;
  while (i < src.length && src[i] !== '}') i = src[i] === '"' || src[i] === "'" ? skipString(src, i) : i + 1;
  if (i >= src.length) throw new Error(`unclosed { in ${src}`);
  return i;
}

function labelList(body: string): string[] {
  return body
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

