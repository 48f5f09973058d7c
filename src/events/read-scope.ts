/**
 * Which rows a reader may see, decided before any query runs and applied in SQL
 * before LIMIT: always one community; channel rows only in `channels`; and
 * channel-less rows only when `includeGlobal`.
 */
export interface ReadScope {
  readonly communityId: string;
  /** Channels whose rows are visible; 'any' only for writer-internal reads that need no access check. */
  readonly channels: readonly string[] | 'any';
  readonly includeGlobal: boolean;
}

export function communityWide(communityId: string): ReadScope {
  return { communityId, channels: 'any', includeGlobal: true };
}
