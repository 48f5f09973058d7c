/** Reading a running relay's /metrics from a bench, on the operator listener spawnRelay recorded. */
import { metricsUrlOf } from './bench-env.js';

/** The pod's whole /metrics text ('' when it does not answer, or is not one this bench spawned). */
export async function metricsText(podUrl: string): Promise<string> {
  const url = metricsUrlOf(podUrl);
  if (url === undefined) return '';
  const res = await fetch(url).catch(() => undefined);
  return res?.ok ? res.text() : '';
}

/** Every sample of one metric family in a /metrics text: [labels text (may be ''), value]. */
function samplesIn(text: string, name: string): Array<[string, number]> {
  return text
    .split('\n')
    .filter((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`))
    .map((l): [string, number] => [l.slice(name.length, l.lastIndexOf(' ')), Number(l.slice(l.lastIndexOf(' ') + 1))]);
}

/** Every sample of one metric family: [labels text (may be ''), value]. */
export async function metricSamples(podUrl: string, name: string): Promise<Array<[string, number]>> {
  return samplesIn(await metricsText(podUrl), name);
}

/** Sum of a family's samples whose labels contain `label` (e.g. `outcome="delivered"`), or all of them. */
export async function podMetric(podUrl: string, name: string, label?: string): Promise<number> {
  return (await metricSamples(podUrl, name)).filter(([labels]) => !label || labels.includes(label)).reduce((sum, [, v]) => sum + v, 0);
}

/** The relay's garbage collections so far (prom-client's default `nodejs_gc_duration_seconds`). */
export interface GcTotals {
  minor: number;
  minorSeconds: number;
  major: number;
  majorSeconds: number;
}

export async function gcTotals(podUrl: string): Promise<GcTotals> {
  const text = await metricsText(podUrl); // one scrape for both families
  const samples = samplesIn(text, 'nodejs_gc_duration_seconds_count');
  const sums = samplesIn(text, 'nodejs_gc_duration_seconds_sum');
  const of = (list: Array<[string, number]>, kind: string) => list.find(([labels]) => labels.includes(`kind="${kind}"`))?.[1] ?? 0;
  return { minor: of(samples, 'minor'), minorSeconds: of(sums, 'minor'), major: of(samples, 'major'), majorSeconds: of(sums, 'major') };
}

export const NO_GC: GcTotals = { minor: 0, minorSeconds: 0, major: 0, majorSeconds: 0 };

/** a + sign × b, field by field. */
export function gcCombine(a: GcTotals, b: GcTotals, sign: 1 | -1): GcTotals {
  return {
    minor: a.minor + sign * b.minor,
    minorSeconds: a.minorSeconds + sign * b.minorSeconds,
    major: a.major + sign * b.major,
    majorSeconds: a.majorSeconds + sign * b.majorSeconds,
  };
}
