import { TtlMap } from './ttl-map.js';

describe('TtlMap', () => {
  it('forgets an entry once its lifetime has passed', () => {
    let now = 0;
    const map = new TtlMap<string>(1000, 10, () => now);
    map.set('a', 'x');
    now = 999;
    expect(map.get('a')).toBe('x');
    now = 1000;
    expect(map.get('a')).toBeUndefined();
    expect(map.has('a')).toBe(false);
  });

  it('refreshes the lifetime on set and admits setIfAbsent only without a live entry', () => {
    let now = 0;
    const map = new TtlMap<true>(1000, 10, () => now);
    expect(map.setIfAbsent('k', true)).toBe(true);
    expect(map.setIfAbsent('k', true)).toBe(false);
    now = 800;
    map.set('k', true);
    now = 1500;
    expect(map.has('k')).toBe(true);
    now = 1800;
    expect(map.setIfAbsent('k', true)).toBe(true);
  });

  it('never holds more than maxEntries: expired entries go first, then the oldest live one', () => {
    let now = 0;
    const map = new TtlMap<number>(1000, 3, () => now);
    map.set('a', 1);
    map.set('b', 2);
    now = 1200;
    map.set('c', 3); // a and b expired: swept
    expect(map.size).toBe(1);
    map.set('d', 4);
    map.set('e', 5);
    map.set('f', 6); // full of live entries: c, the oldest, is dropped
    expect(map.size).toBe(3);
    expect([map.get('c'), map.get('d'), map.get('f')]).toEqual([undefined, 4, 6]);
  });

  it('reports how far back it still holds every key, shortened when the cap drops live entries', () => {
    let now = 10_000;
    const map = new TtlMap<true>(1000, 2, () => now);
    expect(map.coveredSince()).toBe(9000);
    map.set('a', true);
    now = 10_100;
    map.set('b', true);
    now = 10_200;
    map.set('c', true); // drops 'a', set at 10 000 and still live
    expect(map.coveredSince()).toBe(10_001);
    now = 12_000;
    expect(map.coveredSince()).toBe(11_000);
  });
});
