/**
 * Which rows a reader may see, decided before any query runs and applied in SQL
 * before LIMIT: always one community; channel rows only in `channels`;
 * channel-less rows only when `includeGlobal`; and rows of gated kinds only as
 * the visibility rules allow `reader` (events/visibility.ts).
 */
export interface ReadScope {
  readonly communityId: string;
  /** Channels whose rows are visible; 'any' only for writer-internal reads that need no access check. */
  readonly channels: readonly string[] | 'any';
  readonly includeGlobal: boolean;
  /**
   * The reader whose visibility rules apply (lowercase hex pubkey). Every client read sets it;
   * absent only for writer-internal reads that serve no client.
   */
  readonly reader?: string;
}

export function communityWide(communityId: string): ReadScope {
  return { communityId, channels: 'any', includeGlobal: true };
}
