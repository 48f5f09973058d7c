import { CallerLabels, MAX_CALLERS } from './http-observer.js';

describe('CallerLabels', () => {
  it('keeps a plain cluster name and answers unknown for a missing or malformed one', () => {
    const callers = new CallerLabels();
    expect(callers.of('billing-api_2')).toBe('billing-api_2');
    expect(callers.of(['ingest', 'other'])).toBe('ingest');
    expect(callers.of(undefined)).toBe('unknown');
    expect(callers.of('')).toBe('unknown');
    expect(callers.of('has space')).toBe('unknown');
    expect(callers.of('x'.repeat(65))).toBe('unknown');
  });

  it('labels at most MAX_CALLERS distinct names; the ones already seen keep theirs', () => {
    const callers = new CallerLabels();
    const names = Array.from({ length: MAX_CALLERS + 10 }, (_, i) => `svc-${i}`);
    const labels = names.map((n) => callers.of(n));
    expect(labels.slice(0, MAX_CALLERS)).toEqual(names.slice(0, MAX_CALLERS));
    expect(labels.slice(MAX_CALLERS)).toEqual(Array(10).fill('unknown'));
    expect(callers.of('svc-0')).toBe('svc-0');
    expect(new Set(labels).size).toBe(MAX_CALLERS + 1);
  });
});
