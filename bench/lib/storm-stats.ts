/**
 * The storm bench's arithmetic, kept apart from its sockets so it can be checked on its own:
 * Prometheus text → deltas between two scrapes (counters, histogram buckets), a histogram
 * quantile as Prometheus computes it, the clients' back-off schedule, and a tally of the relay's
 * log lines.
 */

/** One sample line of a Prometheus exposition: family-or-series name, its labels, its value. */
export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

const SAMPLE_LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/;
const LABEL_PAIR = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

/** Every sample of a /metrics text (comments skipped). Values keep `+Inf`/`NaN` as numbers. */
export function parseSamples(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const m = SAMPLE_LINE.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const pair of (m[2] ?? '').matchAll(LABEL_PAIR)) labels[pair[1]] = pair[2].replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    out.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return out;
}

export type LabelMatch = Readonly<Record<string, string>>;

const matches = (s: Sample, name: string, match: LabelMatch) => s.name === name && Object.entries(match).every(([k, v]) => s.labels[k] === v);

/** Sum of the series of `name` whose labels include `match`. */
export function sumOf(samples: readonly Sample[], name: string, match: LabelMatch = {}): number {
  return samples.filter((s) => matches(s, name, match)).reduce((sum, s) => sum + s.value, 0);
}

/** after − before of a counter (summed over the matching series). */
export function counterDelta(before: readonly Sample[], after: readonly Sample[], name: string, match: LabelMatch = {}): number {
  return sumOf(after, name, match) - sumOf(before, name, match);
}

/**
 * after − before per value of `label` (e.g. route decisions by `reason`), zeros left out; keys
 * joined with `/` when several labels are asked for.
 */
export function deltaBy(before: readonly Sample[], after: readonly Sample[], name: string, match: LabelMatch, labels: readonly string[]): Record<string, number> {
  const tally = (samples: readonly Sample[], sign: number, into: Map<string, number>) => {
    for (const s of samples) {
      if (!matches(s, name, match)) continue;
      const key = labels.map((l) => s.labels[l] ?? '').join('/');
      into.set(key, (into.get(key) ?? 0) + sign * s.value);
    }
  };
  const acc = new Map<string, number>();
  tally(after, 1, acc);
  tally(before, -1, acc);
  return Object.fromEntries([...acc].filter(([, v]) => v !== 0).sort(([, a], [, b]) => b - a));
}

/** A histogram's cumulative buckets, ascending by upper bound (the last one `+Inf`). */
export type Buckets = Array<{ le: number; count: number }>;

/** The `_bucket` series of histogram `family` matching `match`, summed per `le`, after − before. */
export function bucketDelta(before: readonly Sample[], after: readonly Sample[], family: string, match: LabelMatch = {}): Buckets {
  const byLe = new Map<number, number>();
  const add = (samples: readonly Sample[], sign: number) => {
    for (const s of samples) {
      if (!matches(s, `${family}_bucket`, match) || s.labels.le === undefined) continue;
      const le = s.labels.le === '+Inf' ? Number.POSITIVE_INFINITY : Number(s.labels.le);
      byLe.set(le, (byLe.get(le) ?? 0) + sign * s.value);
    }
  };
  add(after, 1);
  add(before, -1);
  return [...byLe].map(([le, count]) => ({ le, count })).sort((a, b) => a.le - b.le);
}

/**
 * The q-quantile (0..1) of cumulative buckets, interpolated linearly inside its bucket as
 * Prometheus' histogram_quantile does (the first bucket from 0). A quantile that falls in the
 * `+Inf` bucket is reported as the highest finite bound (a floor: "at least this"). NaN when empty.
 */
export function histogramQuantile(q: number, buckets: Buckets): number {
  const total = buckets.at(-1)?.count ?? 0;
  if (total <= 0) return Number.NaN;
  const rank = q * total;
  let prevLe = 0;
  let prevCount = 0;
  for (const { le, count } of buckets) {
    if (count >= rank) {
      if (!Number.isFinite(le)) return prevLe;
      if (count === prevCount) return le;
      return prevLe + ((le - prevLe) * (rank - prevCount)) / (count - prevCount);
    }
    prevLe = le;
    prevCount = count;
  }
  return prevLe;
}

/**
 * The wait before retry number `attempt` (0-based) after a retryable CLOSED: `baseMs` × 2^attempt,
 * jittered uniformly to between half and one and a half of that (`random` in [0, 1)).
 */
export function backoffMs(attempt: number, baseMs: number, random: number): number {
  return baseMs * 2 ** attempt * (0.5 + random);
}

const PINO_LEVELS: Record<number, string> = { 10: 'trace', 20: 'debug', 30: 'info', 40: 'warn', 50: 'error', 60: 'fatal' };

/**
 * The relay's pino JSON lines tallied by `level msg` (with the error's message when the line
 * carries one, as a string or pino's error object), most frequent first, at most `top` entries. Lines that are not JSON are skipped.
 */
export function tallyLogLines(output: string, top = 12): Record<string, number> {
  const tally = new Map<string, number>();
  for (const line of output.split('\n')) {
    if (!line.startsWith('{')) continue;
    let entry: { level?: unknown; msg?: unknown; err?: string | { message?: unknown } };
    try {
      entry = JSON.parse(line) as typeof entry;
    } catch {
      continue;
    }
    // Handlers log `err` as the error's message, pino's serializer as an object with one.
    const message = typeof entry.err === 'string' ? entry.err : entry.err?.message;
    const err = typeof message === 'string' ? `: ${message}` : '';
    const level = PINO_LEVELS[Number(entry.level)] ?? String(entry.level ?? '?');
    const key = `${level} ${String(entry.msg ?? '')}${err}`;
    tally.set(key, (tally.get(key) ?? 0) + 1);
  }
  return Object.fromEntries([...tally].sort(([, a], [, b]) => b - a).slice(0, top));
}

/** Values of a string list tallied, most frequent first. */
export function countBy(values: readonly string[]): Record<string, number> {
  const tally = new Map<string, number>();
  for (const v of values) tally.set(v, (tally.get(v) ?? 0) + 1);
  return Object.fromEntries([...tally].sort(([, a], [, b]) => b - a));
}
