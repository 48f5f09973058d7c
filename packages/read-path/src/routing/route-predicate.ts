/**
 * Route predicates (database.md §2.3) and the channel-scope proof capability.
 *
 * - Bounded: the proved heartbeat entry is at most B old (any query shape).
 * - Covered{upper}: the proved entry's fence wall ≥ upper (channel-bearing rows only).
 * - CoveredPostVerified: thread forward pages; the caller verifies served rows against the wall.
 * - BoundedOrCovered{upper}: covered first (budget-independent), else bounded.
 */

/**
 * Proof that a read only returns channel-bearing rows (the floor guard's domain). Only the
 * three constructors below mint it: a query pinned to one `channel_id`, an inner join from
 * `thread_metadata` (channel_id NOT NULL), and the channel-window API.
 */
export class ChannelScope {
  private constructor(
    readonly channelId: string | undefined,
    readonly source: 'pinned_query' | 'thread_join' | 'channel_window',
  ) {}

  /** The query's SQL pins `channel_id = channelId` (a multi-channel list is not a proof). */
  static pinnedQuery(channelId: string): ChannelScope {
    return new ChannelScope(channelId, 'pinned_query');
  }

  static threadJoin(): ChannelScope {
    return new ChannelScope(undefined, 'thread_join');
  }

  static channelWindow(channelId: string): ChannelScope {
    return new ChannelScope(channelId, 'channel_window');
  }
}

export type RoutePredicate =
  | { readonly kind: 'bounded' }
  | { readonly kind: 'covered'; readonly upperMs: number; readonly proof: ChannelScope }
  | { readonly kind: 'covered_post_verified'; readonly proof: ChannelScope }
  | { readonly kind: 'bounded_or_covered'; readonly upperMs: number; readonly proof: ChannelScope };

export const BOUNDED: RoutePredicate = Object.freeze({ kind: 'bounded' });

/** The routing-relevant shape of a generic event query. */
export interface RoutableQuery {
  /** Set only when the SQL pins `channel_id` to this one value. */
  readonly channelId?: string;
  /** Unix seconds. */
  readonly until?: number;
}

/**
 * `for_query`: with routing disabled (budget unset) always Bounded, which then fails closed as
 * `disabled`, keeping the generic seams dark even for covered-eligible shapes.
 */
export function forQuery(q: RoutableQuery, routingEnabled: boolean): RoutePredicate {
  if (!routingEnabled) return BOUNDED;
  if (q.channelId !== undefined && q.until !== undefined) {
    return { kind: 'bounded_or_covered', upperMs: q.until * 1000, proof: ChannelScope.pinnedQuery(q.channelId) };
  }
  return BOUNDED;
}

/** `from_channel_cursor`: not budget-gated; cursor pages route covered, head pages bounded. */
export function fromChannelCursor(channelId: string, cursorSecs: number | undefined): RoutePredicate {
  if (cursorSecs === undefined) return BOUNDED;
  return { kind: 'covered', upperMs: cursorSecs * 1000, proof: ChannelScope.channelWindow(channelId) };
}
