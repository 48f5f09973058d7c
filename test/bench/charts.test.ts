/**
 * The benches' SVG charts (bench/lib/charts.ts): a chart rendered from a small fixed input must
 * carry the marks for that input (one symbol per point, one rule per phase mark, one bar segment
 * per non-zero outcome), not just be an SVG document.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { latencyCdf, latencyOverTime, outcomeBars, renderSvg, writeCharts } from '../../bench/lib/charts.js';

/** The `<path>`s inside the group Vega gives a mark of this type (`mark-symbol`, `mark-rule`, `mark-rect`...). */
function marks(svg: string, type: string): string[] {
  const groups = svg.split(`class="mark-${type} role-mark`).slice(1);
  return groups.flatMap((g) => g.slice(0, g.indexOf('</g>')).match(/<(path|line)\b/g) ?? []);
}

describe('bench charts', () => {
  it('draws one point per operation and one rule per phase mark', async () => {
    const points = [
      { t: 0.1, ms: 12, series: 'before' },
      { t: 0.2, ms: 14, series: 'before' },
      { t: 1.5, ms: 480, series: 'during' },
      { t: 1.6, ms: 510, series: 'during' },
      { t: 1.7, ms: 350, series: 'during' },
    ];
    const svg = await renderSvg(latencyOverTime('OK latency', points, [{ t: 1, label: 'storm' }, { t: 2, label: 'end' }]));
    expect(svg.startsWith('<svg')).toBe(true);
    expect(marks(svg, 'symbol')).toHaveLength(5);
    expect(marks(svg, 'rule')).toHaveLength(2);
    expect(svg).toContain('OK latency');
    expect(svg).toContain('storm');
  });

  it('draws one bar segment per non-zero outcome, and names the outcomes in the legend', async () => {
    const rows = [
      { group: 'relay', category: 'served first try', count: 990 },
      { group: 'relay', category: 'served after retries', count: 10 },
      { group: 'relay', category: 'dropped', count: 0 },
      { group: 'nostream', category: 'served first try', count: 1000 },
    ];
    const svg = await renderSvg(outcomeBars('outcomes', rows, ['served first try', 'served after retries', 'dropped']));
    expect(marks(svg, 'rect')).toHaveLength(3);
    expect(svg).toContain('served after retries');
  });

  it('draws a distribution line per series and writes files', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'bench-charts-'));
    try {
      const samples = [1, 2, 3, 5, 8, 13].flatMap((ms) => [
        { series: 'relay', ms },
        { series: 'sql', ms: ms / 2 },
      ]);
      const [file] = await writeCharts(dir, [{ name: 'cdf', spec: latencyCdf('REQ latency', samples) }]);
      expect(path.basename(file)).toBe('cdf.svg');
      const svg = readFileSync(file, 'utf8');
      expect(marks(svg, 'line')).toHaveLength(2);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
