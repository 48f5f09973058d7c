import { Injectable } from '@nestjs/common';
import { CoalescingLoader } from '../common/coalescing-loader.js';
import { BanCache } from './ban-cache.js';
import { LOOKUP_BATCH_MAX, LOOKUP_CONCURRENCY, ModerationRepository } from './moderation.repository.js';

interface KeyLookup {
  readonly communityId: string;
  readonly pubkey: string;
}

/**
 * The ban check for reads (REQ, COUNT, `/query`, `/count`). A timeout is a write block only
 * (relay.md §2.9) and does not refuse a read.
 */
@Injectable()
export class BanGate {
  /** Writer reads behind the cache: concurrent misses share statements; each answer may be kept. */
  private readonly expiries = new CoalescingLoader<KeyLookup, number | null>({
    keyOf: (l) => `${l.communityId}:${l.pubkey}`,
    maxBatch: LOOKUP_BATCH_MAX,
    maxConcurrent: LOOKUP_CONCURRENCY,
    load: (batch) => this.readExpiries(batch),
  });

  constructor(
    private readonly moderation: ModerationRepository,
    private readonly cache: BanCache,
  ) {
    // A read under way when a ban changed answers its callers, but no later caller joins it.
    cache.onChange((key) => this.expiries.forget((k) => key === undefined || k === key));
  }

  /**
   * True when the pubkey, or the NIP-OA owner its session proved (an owner's ban cascades to the
   * agent), is banned in the community. A writer read every time, like the AUTH and EVENT gates:
   * concurrent lookups share statements (ModerationRepository.restrictionOf); `fresh` sees every
   * ban committed before the call. Errors propagate so callers fail closed.
   */
  async isBanned(communityId: string, pubkey: string, owner?: string, opts: { fresh?: boolean } = {}): Promise<boolean> {
    const states = await Promise.all(subjects(pubkey, owner).map((s) => this.moderation.restrictionOf(communityId, s, opts)));
    return states.some((r) => r.kind === 'banned');
  }

  /**
   * The same answer for an authenticated socket's REQ and COUNT admission, from this pod's
   * BanCache when it knows the key (no query), else from the writer (kept for the next request
   * when the cache may keep it). Errors propagate so callers fail closed.
   */
  async isBannedForRead(communityId: string, pubkey: string, owner?: string): Promise<boolean> {
    const keys = subjects(pubkey, owner);
    const known = keys.map((s) => this.cache.lookup(communityId, s));
    if (known.includes(true)) return true;
    if (!known.includes(undefined)) return false;
    const nowMs = Date.now();
    const read = await Promise.all(keys.filter((_, i) => known[i] === undefined).map((s) => this.expiries.get({ communityId, pubkey: s })));
    return read.some((until) => until !== null && until > nowMs);
  }

  private async readExpiries(batch: readonly KeyLookup[]): Promise<Map<string, number | null>> {
    // Noted before the statement: an answer is kept only if no ban changed while it was read.
    const version = this.cache.version;
    const readAtMs = Date.now();
    const found = await this.moderation.banExpiries(batch);
    const answers = new Map<string, number | null>();
    for (const b of batch) {
      const key = `${b.communityId}:${b.pubkey}`;
      const until = found.get(key);
      this.cache.store(version, b.communityId, b.pubkey, until, readAtMs);
      answers.set(key, until ?? null);
    }
    return answers;
  }
}

/** The keys whose ban refuses this session: its pubkey and the NIP-OA owner it proved. */
function subjects(pubkey: string, owner: string | undefined): string[] {
  return owner === undefined || owner === pubkey ? [pubkey] : [pubkey, owner];
}
