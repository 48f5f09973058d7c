/**
 * Sliding-window-log counters in Redis, shared by every pod (relay.md §2.4):
 * one sorted set of hit times per (community, pubkey, bucket). One script call
 * checks a request's buckets in order with the same semantics as the in-process
 * SlidingWindowLimiter: each admitted bucket records the hit, and the first full
 * bucket refuses the request. Times come from the Redis server's clock, so pods
 * with skewed clocks still share one window.
 */
import type { Redis } from 'ioredis';

export interface Bucket {
  readonly key: string;
  readonly limit: number;
  readonly windowMs: number;
}

// KEYS: one log per bucket. ARGV[1]: a member unique to this hit; then limit, window_ms per key.
// Returns -1 when every bucket admitted the hit, else the ms until the refusing bucket's oldest hit leaves.
const ADMIT_SCRIPT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
for i, key in ipairs(KEYS) do
  local limit = tonumber(ARGV[2 * i])
  local window = tonumber(ARGV[2 * i + 1])
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
  if redis.call('ZCARD', key) >= limit then
    local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
    return tonumber(oldest[2]) + window - now
  end
  redis.call('ZADD', key, now, ARGV[1])
  redis.call('PEXPIRE', key, window)
end
return -1
`;

type AdmitCommand = (numKeys: number, ...keysAndArgs: Array<string | number>) => Promise<number>;

export class SharedSlidingWindow {
  private seq = 0;

  constructor(
    private readonly client: () => Redis,
    private readonly memberPrefix: string,
  ) {}

  /** Milliseconds until retry when refused, or -1 when admitted. Throws when Redis fails. */
  async hit(buckets: readonly Bucket[]): Promise<number> {
    const redis = this.client();
    if (!('buzzAdmit' in redis)) redis.defineCommand('buzzAdmit', { lua: ADMIT_SCRIPT });
    const admit = (redis as unknown as { buzzAdmit: AdmitCommand }).buzzAdmit.bind(redis);
    const member = `${this.memberPrefix}:${++this.seq}`;
    const args = buckets.flatMap((b) => [b.limit, b.windowMs]);
    return Number(await admit(buckets.length, ...buckets.map((b) => b.key), member, ...args));
  }
}
