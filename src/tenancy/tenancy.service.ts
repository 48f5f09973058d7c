import { Injectable } from '@nestjs/common';
import { CoalescingLoader } from '../common/coalescing-loader.js';
import { Community, CommunityRepository } from './community.repository.js';
import { hostWithoutPort, normalizeHost } from '../common/host.js';

export const UNKNOWN_HOST_MESSAGE = 'relay: no community is configured for this host';
/** A `Host` header that is not one host (normalizeHost), or sent twice. */
export const INVALID_HOST_MESSAGE = 'invalid Host header';
/**
 * The answer when the lookup itself failed (a database error or timeout): retryable, and never
 * the unknown-host text, which tells a client the tenant does not exist.
 */
export const TENANT_LOOKUP_FAILED_MESSAGE = 'relay: the community lookup failed, retry later';
const CACHE_TTL_MS = 10_000;
/** How long an expired resolution may still answer while lookups fail (writer down or saturated). */
export const STALE_ON_ERROR_MS = 10 * 60_000;
const CACHE_MAX = 10_000;

export type TenantResolution =
  | { ok: true; community: Community; host: string }
  | { ok: false; reason: 'invalid_host' | 'unknown_host' | 'lookup_failed' };

/**
 * Host → community. The exact normalised host wins; a host with a non-default
 * port also matches its port-less entry, so `localhost:3000` finds `localhost`.
 * Positive results are cached briefly; an unknown host is never cached, so a new
 * community is reachable at once. Concurrent misses for one host share one lookup.
 * A lookup that fails is `lookup_failed` (callers answer a retryable 503, never the unknown-host
 * 404), unless this pod resolved the host within STALE_ON_ERROR_MS: then the expired entry
 * answers, so a writer saturated by client reads does not lock known tenants out.
 */
@Injectable()
export class TenancyService {
  private readonly cache = new Map<string, { community: Community; expires: number }>();
  /** One writer lookup per host at a time: a storm of connections to one host shares it. */
  private readonly lookups = new CoalescingLoader<string, Community | undefined>({
    keyOf: (host) => host,
    maxBatch: 1,
    maxConcurrent: Number.MAX_SAFE_INTEGER,
    load: async ([host]) => {
      const bare = hostWithoutPort(host);
      return new Map([[host, await this.communities.findByHost(bare === host ? [host] : [host, bare])]]);
    },
  });

  constructor(private readonly communities: CommunityRepository) {}

  /** Drops this pod's cached resolutions of a community whose record changed (a 9033). */
  forget(communityId: string): void {
    for (const [host, entry] of this.cache) if (entry.community.id === communityId) this.cache.delete(host);
  }

  async resolve(rawHost: string | undefined): Promise<TenantResolution> {
    const host = normalizeHost(rawHost);
    if (!host) return { ok: false, reason: 'invalid_host' };
    const cached = this.cache.get(host);
    if (cached && cached.expires > Date.now()) return { ok: true, community: cached.community, host };
    let community: Community | undefined;
    try {
      community = await this.lookups.get(host);
    } catch {
      const stale = this.cache.get(host);
      if (stale && stale.expires + STALE_ON_ERROR_MS > Date.now()) return { ok: true, community: stale.community, host };
      return { ok: false, reason: 'lookup_failed' };
    }
    if (!community) return { ok: false, reason: 'unknown_host' };
    if (this.cache.size >= CACHE_MAX) this.cache.clear();
    this.cache.set(host, { community, expires: Date.now() + CACHE_TTL_MS });
    return { ok: true, community, host };
  }
}
