import { Injectable } from '@nestjs/common';
import { CoalescingLoader } from '../common/coalescing-loader.js';
import { AccessKey, accessKey, ChannelRepository } from './channel.repository.js';
import { isCanonicalUuid } from '../nostr/group-id.js';

export const ACCESS_CACHE_TTL_MS = 10_000;
const ACCESS_CACHE_MAX = 50_000;
/** Most keys one coalesced access statement reads, and most such statements at once. */
const ACCESS_BATCH_MAX = 1000;
const ACCESS_CONCURRENCY = 2;

type Confirmation = AccessKey & { readonly channelId: string };

/**
 * Which channels a pubkey may read, from a 10 s cache of writer reads (relay.md §2.6 step 5). A
 * requested channel missing from the cached set is confirmed with an uncached read before it is
 * refused (step 6), so a member who just joined is never turned away; membership changes on this
 * pod (and, through the fan-out, on others) drop the cached entries at once.
 *
 * Both reads are coalesced (CoalescingLoader): the loads of one key share one query, and the
 * loads of many keys made together share one statement, so a reconnect storm of N members costs a
 * few writer statements, not N. A load that an invalidation overtakes answers its callers but is
 * not cached, and later callers do not join it.
 */
@Injectable()
export class ChannelAccessService {
  private readonly cache = new Map<string, { ids: Set<string>; expires: number }>();
  /** Bumped by every invalidation: a load that started before one must not fill the cache. */
  private epoch = 0;
  private readonly loads: CoalescingLoader<AccessKey, string[]>;
  private readonly confirmations: CoalescingLoader<Confirmation, boolean>;

  constructor(private readonly channels: ChannelRepository) {
    this.loads = new CoalescingLoader({ keyOf: accessKey, maxBatch: ACCESS_BATCH_MAX, maxConcurrent: ACCESS_CONCURRENCY, load: (batch) => this.channels.accessibleIdsAmong(batch) });
    this.confirmations = new CoalescingLoader({
      keyOf: confirmationKey,
      maxBatch: ACCESS_BATCH_MAX,
      maxConcurrent: ACCESS_CONCURRENCY,
      load: async (batch) => {
        const readable = await this.channels.readableTriples(batch);
        return new Map(batch.map((t) => [confirmationKey(t), readable.has(confirmationKey(t))]));
      },
    });
  }

  async accessible(communityId: string, pubkey: string): Promise<Set<string>> {
    const key = accessKey({ communityId, pubkey });
    const hit = this.cache.get(key);
    if (hit && hit.expires > Date.now()) return hit.ids;
    const epoch = this.epoch;
    const ids = new Set(await this.loads.get({ communityId, pubkey }));
    if (epoch !== this.epoch) return ids;
    if (this.cache.size >= ACCESS_CACHE_MAX) this.cache.clear();
    this.cache.set(key, { ids, expires: Date.now() + ACCESS_CACHE_TTL_MS });
    return ids;
  }

  /** The requested channels the pubkey may read, repairing stale cache misses uncached. */
  async authorize(communityId: string, pubkey: string, requested: readonly string[]): Promise<string[]> {
    const cached = await this.accessible(communityId, pubkey);
    const checks = requested.map(async (id) => cached.has(id) || (await this.canReadUncached(communityId, id, pubkey)));
    const allowed = await Promise.all(checks);
    return requested.filter((_, i) => allowed[i]);
  }

  /** Fan-out re-check at send time: cached, failing closed on any error. */
  async canRead(communityId: string, channelId: string, pubkey: string): Promise<boolean> {
    try {
      return (await this.accessible(communityId, pubkey)).has(channelId);
    } catch {
      return false;
    }
  }

  invalidate(communityId: string, pubkey?: string): void {
    this.epoch += 1;
    const prefix = pubkey === undefined ? `${communityId}:` : `${communityId}:${pubkey}`;
    const matches = (k: string) => (pubkey === undefined ? k.startsWith(prefix) : k === prefix || k.startsWith(`${prefix}:`));
    for (const k of [...this.cache.keys()]) if (matches(k)) this.cache.delete(k);
    this.loads.forget(matches);
    this.confirmations.forget(matches);
  }

  /** The uncached confirmation (never cached; concurrent ones for the same triple share a query). */
  private canReadUncached(communityId: string, channelId: string, pubkey: string): Promise<boolean> {
    if (!isCanonicalUuid(channelId)) return Promise.resolve(false);
    return this.confirmations.get({ communityId, pubkey, channelId });
  }
}

function confirmationKey(c: Confirmation): string {
  return `${c.communityId}:${c.pubkey}:${c.channelId}`;
}
