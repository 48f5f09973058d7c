import { BAN_CACHE_MAX_ENTRIES, BanCache } from './ban-cache.js';

const C = '00000000-0000-0000-0000-000000000001';

function trustedCache(clearTtlMs = 1000): BanCache {
  const cache = new BanCache({ banRecheckMs: clearTtlMs });
  cache.setTrusted(true);
  return cache;
}

describe('BanCache', () => {
  it('keeps nothing while untrusted, and forgets everything when trust changes', () => {
    const cache = new BanCache({ banRecheckMs: 1000 });
    cache.store(cache.version, C, 'a', undefined);
    expect(cache.lookup(C, 'a')).toBeUndefined();
    cache.setTrusted(true);
    cache.store(cache.version, C, 'a', Infinity);
    expect(cache.lookup(C, 'a')).toBe(true);
    cache.setTrusted(true);
    expect(cache.lookup(C, 'a')).toBeUndefined();
  });

  it('drops an answer read before a change it did not see', () => {
    const cache = trustedCache();
    const version = cache.version;
    cache.invalidate(C, 'other'); // any change while the read ran
    cache.store(version, C, 'a', undefined);
    expect(cache.lookup(C, 'a')).toBeUndefined();
    cache.store(cache.version, C, 'a', undefined);
    expect(cache.lookup(C, 'a')).toBe(false);
    cache.invalidate(C, 'a');
    expect(cache.lookup(C, 'a')).toBeUndefined();
  });

  it('answers a ban until it expires and "not banned" for at most the re-check interval', () => {
    const cache = trustedCache(1000);
    cache.store(cache.version, C, 'banned', 5000, 0);
    cache.store(cache.version, C, 'clear', undefined, 0);
    expect(cache.lookup(C, 'banned', 4999)).toBe(true);
    expect(cache.lookup(C, 'clear', 999)).toBe(false);
    expect(cache.lookup(C, 'clear', 1000)).toBeUndefined();
    expect(cache.lookup(C, 'banned', 5000)).toBeUndefined();
  });

  it('holds at most BAN_CACHE_MAX_ENTRIES, evicting the least recently used', () => {
    const cache = trustedCache(60_000);
    for (let i = 0; i < BAN_CACHE_MAX_ENTRIES; i++) cache.store(cache.version, C, `k${i}`, undefined);
    expect(cache.lookup(C, 'k0')).toBe(false); // now the most recently used
    cache.store(cache.version, C, 'extra', undefined);
    expect(cache.size).toBe(BAN_CACHE_MAX_ENTRIES);
    expect(cache.lookup(C, 'k1')).toBeUndefined();
    expect(cache.lookup(C, 'k0')).toBe(false);
    expect(cache.lookup(C, 'extra')).toBe(false);
  });
});
