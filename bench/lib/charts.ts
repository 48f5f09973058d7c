/**
 * SVG charts for the benches (`--charts DIR`): Vega-Lite specs compiled and rendered by Vega
 * headless (`renderer: 'none'`, no canvas, no browser), written as one .svg per chart. The
 * benches build their charts with the few spec builders below, so every chart has the same look:
 * latency over time (one point per operation, coloured by series, with labelled phase marks),
 * latency distributions, and outcome counts.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import * as vega from 'vega';
import * as vl from 'vega-lite';
import type { TopLevelSpec } from 'vega-lite';

export interface Chart {
  /** File name without `.svg`. */
  name: string;
  spec: TopLevelSpec;
}

const WIDTH = 640;
const HEIGHT = 280;
/** Points past this many per series are thinned evenly (a 50,000-point SVG helps nobody). */
const MAX_POINTS_PER_SERIES = 4000;

/** One Vega-Lite spec to an SVG document. */
export async function renderSvg(spec: TopLevelSpec): Promise<string> {
  const view = new vega.View(vega.parse(vl.compile(spec).spec), { renderer: 'none' });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}

/** Renders each chart into `dir` (created if needed); returns the files written. */
export async function writeCharts(dir: string, charts: readonly Chart[]): Promise<string[]> {
  mkdirSync(dir, { recursive: true });
  const files: string[] = [];
  for (const chart of charts) {
    const file = path.join(dir, `${chart.name}.svg`);
    writeFileSync(file, await renderSvg(chart.spec));
    files.push(file);
  }
  return files;
}

export interface TimedPoint {
  /** Seconds from the start of the run (or of its first phase). */
  t: number;
  ms: number;
  series: string;
}

export interface PhaseMark {
  /** Seconds, on the points' clock. */
  t: number;
  label: string;
}

/**
 * Latency of each operation against when it started: points (one per operation) coloured by
 * series, on a log scale when the values span more than two decades, with vertical rules at the
 * phase marks (e.g. storm start and end).
 */
export function latencyOverTime(title: string, points: readonly TimedPoint[], marks: readonly PhaseMark[] = [], yTitle = 'latency (ms)'): TopLevelSpec {
  const values = thin(points);
  const positive = values.map((p) => p.ms).filter((v) => v > 0);
  const log = positive.length > 0 && Math.max(...positive) / Math.min(...positive) > 100;
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v5.json',
    title,
    width: WIDTH,
    height: HEIGHT,
    layer: [
      {
        data: { values: values.map((p) => ({ ...p, ms: log ? Math.max(p.ms, 0.01) : p.ms })) },
        mark: { type: 'point', filled: true, size: 12, opacity: 0.6 },
        encoding: {
          x: { field: 't', type: 'quantitative', title: 'time (s)' },
          y: { field: 'ms', type: 'quantitative', title: yTitle, scale: log ? { type: 'log' } : { zero: true } },
          color: { field: 'series', type: 'nominal', title: null, legend: { labelLimit: 240 } },
        },
      },
      ...(marks.length === 0
        ? []
        : [
            {
              data: { values: [...marks] },
              mark: { type: 'rule' as const, strokeDash: [4, 4], color: '#555' },
              encoding: { x: { field: 't', type: 'quantitative' as const } },
            },
            {
              data: { values: [...marks] },
              mark: { type: 'text' as const, align: 'left' as const, dx: 3, dy: -4, color: '#555', fontSize: 10 },
              encoding: { x: { field: 't', type: 'quantitative' as const }, y: { value: 0 }, text: { field: 'label' } },
            },
          ]),
    ],
  } as TopLevelSpec;
}

export interface CountRow {
  /** The bar (e.g. a bench variant). */
  group: string;
  /** The stacked segment (e.g. an outcome). */
  category: string;
  count: number;
}

/** Horizontal stacked bars: one bar per group, one segment per category, labelled by count. */
export function outcomeBars(title: string, rows: readonly CountRow[], categoryOrder: readonly string[]): TopLevelSpec {
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v5.json',
    title,
    width: WIDTH,
    data: { values: rows.filter((r) => r.count > 0).map((r) => ({ ...r, order: categoryOrder.indexOf(r.category) })) },
    mark: { type: 'bar' },
    encoding: {
      y: { field: 'group', type: 'nominal', title: null },
      x: { field: 'count', type: 'quantitative', stack: 'zero', title: 'clients' },
      color: { field: 'category', type: 'nominal', title: null, scale: { domain: [...categoryOrder] }, legend: { labelLimit: 240 } },
      order: { field: 'order', type: 'quantitative' },
      tooltip: [{ field: 'category' }, { field: 'count' }],
    },
  } as TopLevelSpec;
}

export interface SeriesSample {
  series: string;
  ms: number;
}

/**
 * The distribution of latencies per series as an empirical CDF: x the latency, y the share of
 * operations at or under it (a percentile read straight off the chart).
 */
export function latencyCdf(title: string, samples: readonly SeriesSample[]): TopLevelSpec {
  const bySeries = new Map<string, number[]>();
  for (const s of samples) bySeries.set(s.series, [...(bySeries.get(s.series) ?? []), s.ms]);
  const values: Array<{ series: string; ms: number; share: number }> = [];
  for (const [series, list] of bySeries) {
    const sorted = Float64Array.from(list).sort();
    const step = Math.max(1, Math.floor(sorted.length / MAX_POINTS_PER_SERIES));
    for (let i = 0; i < sorted.length; i += step) values.push({ series, ms: sorted[i], share: (i + 1) / sorted.length });
    values.push({ series, ms: sorted[sorted.length - 1], share: 1 });
  }
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v5.json',
    title,
    width: WIDTH,
    height: HEIGHT,
    data: { values },
    mark: { type: 'line', interpolate: 'step-after' },
    encoding: {
      x: { field: 'ms', type: 'quantitative', title: 'latency (ms)', scale: { type: 'log' } },
      y: { field: 'share', type: 'quantitative', title: 'share at or under', axis: { format: '%' } },
      color: { field: 'series', type: 'nominal', title: null, legend: { labelLimit: 240 } },
    },
  } as TopLevelSpec;
}

/** At most MAX_POINTS_PER_SERIES points per series, evenly spaced in the input order. */
function thin(points: readonly TimedPoint[]): TimedPoint[] {
  const counts = new Map<string, number>();
  for (const p of points) counts.set(p.series, (counts.get(p.series) ?? 0) + 1);
  const seen = new Map<string, number>();
  return points.filter((p) => {
    const n = counts.get(p.series)!;
    const i = seen.get(p.series) ?? 0;
    seen.set(p.series, i + 1);
    const step = Math.ceil(n / MAX_POINTS_PER_SERIES);
    return i % step === 0;
  });
}

/** Where `--charts` defaults to: under .data/ (git-ignored), one folder per bench. */
export const DEFAULT_CHARTS_ROOT = '.data/bench-charts';

/** The `--charts` option every charting bench takes: a directory, or `none` for no charts. */
export const chartsOption = { charts: { type: 'string', default: DEFAULT_CHARTS_ROOT } } as const;

/** The directory a bench writes its charts into, or undefined for `--charts none`. */
export function chartsDir(option: string | undefined, bench: string): string | undefined {
  if (option === 'none' || option === '') return undefined;
  return option === undefined || option === DEFAULT_CHARTS_ROOT ? path.join(DEFAULT_CHARTS_ROOT, bench) : option;
}
