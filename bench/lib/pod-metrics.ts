/** Reading a running relay's /metrics from a bench (the pod's ws:// URL names its HTTP port too). */

/** Every sample of one metric family: [labels text (may be ''), value]. */
export async function metricSamples(podUrl: string, name: string): Promise<Array<[string, number]>> {
  const res = await fetch(`${podUrl.replace(/^ws/, 'http')}/metrics`).catch(() => undefined);
  if (!res?.ok) return [];
  return (await res.text())
    .split('\n')
    .filter((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`))
    .map((l): [string, number] => [l.slice(name.length, l.lastIndexOf(' ')), Number(l.slice(l.lastIndexOf(' ') + 1))]);
}

/** Sum of a family's samples whose labels contain `label` (e.g. `outcome="delivered"`), or all of them. */
export async function podMetric(podUrl: string, name: string, label?: string): Promise<number> {
  return (await metricSamples(podUrl, name)).filter(([labels]) => !label || labels.includes(label)).reduce((sum, [, v]) => sum + v, 0);
}
