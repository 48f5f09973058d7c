import { Injectable } from '@nestjs/common';
import { ChannelRepository } from './channel.repository.js';

export const ACCESS_CACHE_TTL_MS = 10_000;
const ACCESS_CACHE_MAX = 50_000;

/**
 * Which channels a pubkey may read, from a 10 s cache of writer reads. A
 * requested channel missing from the cached set is confirmed with an uncached
 * read before it is refused, so a member who just joined is never turned away;
 * membership changes on this pod drop the cached entry at once.
 */
@Injectable()
export class ChannelAccessService {
  private readonly cache = new Map<string, { ids: Set<string>; expires: number }>();

  constructor(private readonly channels: ChannelRepository) {}

  async accessible(communityId: string, pubkey: string): Promise<Set<string>> {
    const key = `${communityId}:${pubkey}`;
    const hit = this.cache.get(key);
    if (hit && hit.expires > Date.now()) return hit.ids;
    const ids = new Set(await this.channels.accessibleIds(communityId, pubkey));
    if (this.cache.size >= ACCESS_CACHE_MAX) this.cache.clear();
    this.cache.set(key, { ids, expires: Date.now() + ACCESS_CACHE_TTL_MS });
    return ids;
  }

  /** The requested channels the pubkey may read, repairing stale cache misses uncached. */
  async authorize(communityId: string, pubkey: string, requested: readonly string[]): Promise<string[]> {
    const cached = await this.accessible(communityId, pubkey);
    const out: string[] = [];
    for (const id of requested) {
      if (cached.has(id) || (await this.canReadUncached(communityId, id, pubkey))) out.push(id);
    }
    return out;
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
    if (pubkey) this.cache.delete(`${communityId}:${pubkey}`);
    else for (const k of this.cache.keys()) if (k.startsWith(`${communityId}:`)) this.cache.delete(k);
  }

  private async canReadUncached(communityId: string, channelId: string, pubkey: string): Promise<boolean> {
    const ch = await this.channels.find(communityId, channelId);
    if (!ch) return false;
    if (ch.visibility === 'open') return true;
    return (await this.channels.memberRole(communityId, channelId, pubkey)) !== undefined;
  }
}
