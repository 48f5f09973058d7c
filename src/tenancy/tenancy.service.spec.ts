import { jest } from '@jest/globals';
import type { Community, CommunityRepository } from './community.repository.js';
import { STALE_ON_ERROR_MS, TenancyService } from './tenancy.service.js';

const community: Community = { id: 'c1', host: 'chat.example', archived: false, icon: null };

/** A repository whose lookups answer from a map, or fail while `down` (a database error or timeout). */
function repository() {
  const state = { down: false, lookups: 0 };
  const repo = {
    findByHost: async (hosts: readonly string[]) => {
      state.lookups += 1;
      if (state.down) throw new Error('timeout exceeded when trying to connect');
      return hosts.includes('chat.example') ? community : undefined;
    },
  } as unknown as CommunityRepository;
  return { repo, state };
}

// Only the clock is faked: the lookups' own batching runs on real timers.
beforeEach(() => jest.useFakeTimers({ now: 1_000_000, doNotFake: ['setTimeout', 'clearTimeout', 'setImmediate', 'clearImmediate', 'setInterval', 'clearInterval', 'nextTick', 'queueMicrotask'] }));
const advance = (ms: number) => jest.setSystemTime(Date.now() + ms);
afterEach(() => jest.useRealTimers());

describe('TenancyService', () => {
  it('says a failed lookup failed, never that the host has no community', async () => {
    const { repo, state } = repository();
    state.down = true;
    expect(await new TenancyService(repo).resolve('chat.example')).toEqual({ ok: false, reason: 'lookup_failed' });
    expect(await new TenancyService(repo).resolve('nobody.example')).toEqual({ ok: false, reason: 'lookup_failed' });
  });

  it('says unknown_host only when the lookup answered', async () => {
    const { repo } = repository();
    expect(await new TenancyService(repo).resolve('nobody.example')).toEqual({ ok: false, reason: 'unknown_host' });
  });

  it('keeps answering a host it resolved while lookups fail, for STALE_ON_ERROR_MS', async () => {
    const { repo, state } = repository();
    const tenancy = new TenancyService(repo);
    expect(await tenancy.resolve('chat.example')).toMatchObject({ ok: true, community });
    state.down = true;
    advance(60_000); // past the cache's own lifetime: a lookup is tried, and fails
    const lookups = state.lookups;
    expect(await tenancy.resolve('chat.example')).toMatchObject({ ok: true, community });
    expect(state.lookups).toBe(lookups + 1);
    advance(STALE_ON_ERROR_MS);
    expect(await tenancy.resolve('chat.example')).toEqual({ ok: false, reason: 'lookup_failed' });
  });
});
