/**
 * Quota counters in Redis, shared by every pod (relay.md §2.4): one key per
 * (community, pubkey, bucket). A bucket is either a sliding-window log (a sorted
 * set of hit times: at most `limit` hits per `windowMs`) or, when it has a
 * `burst`, a token bucket (a hash of tokens and last update: `burst` tokens,
 * refilled at `limit` per `windowMs`). One script call checks a request's
 * buckets in order with the same semantics as the in-process limiters: each
 * admitted bucket records the hit, and the first full bucket refuses the
 * request. Times come from the Redis server's clock, so pods with skewed clocks
 * still share one window.
 */
import type { Redis } from 'ioredis';

export interface Bucket {
  readonly key: string;
  readonly limit: number;
  readonly windowMs: number;
  /** Token-bucket capacity; absent = a sliding-window log. */
  readonly burst?: number;
}

// KEYS: one per bucket. ARGV[1]: a member unique to this hit; then limit, window_ms, burst (0 = log) per key.
// Returns -1 when every bucket admitted the hit, else the ms until the refusing bucket admits again.
// A token bucket's key that holds something else (a log written before the bucket had a burst) is
// replaced rather than failing the check.
const ADMIT_SCRIPT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
for i, key in ipairs(KEYS) do
  local limit = tonumber(ARGV[3 * i - 1])
  local window = tonumber(ARGV[3 * i])
  local burst = tonumber(ARGV[3 * i + 1])
  if burst > 0 then
    local kind = redis.call('TYPE', key).ok
    if kind ~= 'hash' and kind ~= 'none' then redis.call('DEL', key) end
    local state = redis.call('HMGET', key, 'tokens', 'at')
    local tokens = burst
    if state[1] then
      tokens = math.min(burst, tonumber(state[1]) + (now - tonumber(state[2])) * limit / window)
    end
    if tokens < 1 then
      return math.ceil((1 - tokens) * window / limit)
    end
    redis.call('HSET', key, 'tokens', tostring(tokens - 1), 'at', now)
    redis.call('PEXPIRE', key, math.ceil(burst * window / limit))
  else
    redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
    if redis.call('ZCARD', key) >= limit then
      local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
      return tonumber(oldest[2]) + window - now
    end
    redis.call('ZADD', key, now, ARGV[1])
    redis.call('PEXPIRE', key, window)
  end
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
    const args = buckets.flatMap((b) => [b.limit, b.windowMs, b.burst ?? 0]);
    return Number(await admit(buckets.length, ...buckets.map((b) => b.key), member, ...args));
  }
}
