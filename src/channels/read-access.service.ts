/**
 * Decides, before any history query runs, which rows a reader may see
 * (relay.md §2.6 steps 4–8): the explicit-channel cap, the requested channels
 * the reader may read (repairing stale cache misses), and the sensitive-kind
 * gates. The result is a ReadScope that the SQL applies before LIMIT.
 */
import { Injectable } from '@nestjs/common';
import { NostrFilter } from '../nostr/nostr.types.js';
import { AUTHOR_ONLY_KINDS, P_GATED_KINDS, RESULT_GATED_KINDS } from '../nostr/kinds.js';
import { ReadScope } from './read-scope.js';
import { ChannelAccessService } from './channel-access.service.js';
import { channelIdsOf } from '../nostr/group-id.js';
import { Refusal } from '../nostr/refusal.js';
import { CHANNEL_ACCESS_REFUSALS } from './channel-access.refusals.js';

export const MAX_EXPLICIT_CHANNELS = 128;
const ENGRAM_KIND = 30174;

export type ScopeDecision = { ok: true; scope: ReadScope } | { ok: false; reason: Refusal };

export type GateWording = 'req' | 'count';

@Injectable()
export class ReadAccessService {
  constructor(private readonly access: ChannelAccessService) {}

  async scopeFor(communityId: string, pubkey: string, filters: readonly NostrFilter[], wording: GateWording = 'req'): Promise<ScopeDecision> {
    const explicit = filters.reduce((n, f) => n + (f.tags.h?.length ?? 0), 0);
    if (explicit > MAX_EXPLICIT_CHANNELS) return { ok: false, reason: CHANNEL_ACCESS_REFUSALS.tooManyChannels };
    const pinned = filters.length > 0 && filters.every((f) => (f.tags.h?.length ?? 0) > 0);
    if (pinned) {
      const requested = channelIdsOf(filters.flatMap((f) => f.tags.h!));
      const allowed = await this.access.authorize(communityId, pubkey, requested);
      if (allowed.length === 0) return { ok: false, reason: CHANNEL_ACCESS_REFUSALS.notChannelMember };
      const scope: ReadScope = { communityId, channels: allowed, includeGlobal: false, reader: pubkey };
      // A REQ pinned to one channel skips the sensitive-kind gates (relay.md §2.6 step 8).
      if (allowed.length === 1) return { ok: true, scope };
      return this.gate(filters, pubkey, wording) ?? { ok: true, scope };
    }
    const gate = this.gate(filters, pubkey, wording);
    if (gate) return gate;
    const accessible = await this.access.accessible(communityId, pubkey);
    return { ok: true, scope: { communityId, channels: [...accessible], includeGlobal: true, reader: pubkey } };
  }

  /** Per-filter scope for the bridge: a filter whose requested channels are all inaccessible yields undefined (skipped). */
  async filterScope(communityId: string, pubkey: string, filter: NostrFilter): Promise<ReadScope | undefined> {
    const requested = filter.tags.h;
    if (!requested || requested.length === 0) {
      return { communityId, channels: [...(await this.access.accessible(communityId, pubkey))], includeGlobal: true, reader: pubkey };
    }
    const allowed = await this.access.authorize(communityId, pubkey, channelIdsOf(requested));
    return allowed.length === 0 ? undefined : { communityId, channels: allowed, includeGlobal: false, reader: pubkey };
  }

  /** Sensitive-kind gates for reads that are not pinned to one channel. */
  gate(filters: readonly NostrFilter[], pubkey: string, wording: GateWording): { ok: false; reason: Refusal } | undefined {
    for (const f of filters) {
      const kinds = f.kinds;
      const canMatch = (set: ReadonlySet<number>) => (kinds === undefined ? true : kinds.some((k) => set.has(k)));
      const selfP = (f.tags.p?.length ?? 0) > 0 && f.tags.p!.every((p) => p === pubkey);
      const selfAuthor = (f.authors?.length ?? 0) > 0 && f.authors!.every((a) => a === pubkey);
      const idsExempt = f.ids !== undefined && !(kinds ?? []).some((k) => RESULT_GATED_KINDS.has(k));
      if (canMatch(P_GATED_KINDS) && kinds !== undefined && !selfP && !idsExempt) {
        return { ok: false, reason: wording === 'count' ? CHANNEL_ACCESS_REFUSALS.pGatedKinds : CHANNEL_ACCESS_REFUSALS.pGatedEvents };
      }
      if (kinds?.includes(ENGRAM_KIND) && !selfAuthor && !selfP && f.ids === undefined) {
        return { ok: false, reason: CHANNEL_ACCESS_REFUSALS.engramReads };
      }
      if (kinds !== undefined && kinds.length > 0 && kinds.every((k) => AUTHOR_ONLY_KINDS.has(k)) && !selfAuthor) {
        return { ok: false, reason: CHANNEL_ACCESS_REFUSALS.authorOnlyKinds };
      }
    }
    return undefined;
  }
}
