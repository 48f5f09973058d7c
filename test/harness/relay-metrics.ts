/** Reads a relay's /metrics (the operator listener) for end-to-end assertions. */
import { httpRequest } from './nostr-clients.js';

/** Sum of the samples of `name` whose labels include `labels` (0 when none is exported yet). */
export async function metricSum(metricsUrl: string, name: string, labels: Record<string, string> = {}): Promise<number> {
  const text = (await httpRequest(metricsUrl, {})).body;
  let total = 0;
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(\{([^}]*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = Object.fromEntries([...(m[3] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((l) => [l[1], l[2]]));
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) total += Number(m[4]);
  }
  return total;
}
